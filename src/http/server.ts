/**
 * The REST server: Fastify app + job worker pool + callback dispatcher + retention sweeper,
 * on the Backends interfaces (embedded local-disk implementations by default).
 */
import fastifyCors from '@fastify/cors';
import fastifyHelmet from '@fastify/helmet';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from 'fastify';
import type { AddressInfo } from 'node:net';
import { MAX_VOLUME_THRESHOLD_DB, MIN_VOLUME_THRESHOLD_DB } from '../analysis/options';
import { CallbackDispatcher } from '../callbacks/dispatcher';
import { CallbackSecrets } from '../callbacks/signing';
import { type Config, defaultConfig, type DeepPartial, mergeConfig } from '../config';
import { createDownloadService, type DownloadDeps, type DownloadService } from '../download';
import { type Analyzer, pipelineAnalyzer } from '../pipeline/analyzer';
import { openEmbeddedBackends } from '../jobs/embedded';
import { JobMetrics } from '../jobs/metrics';
import { RetentionSweeper } from '../jobs/retention';
import { JobService } from '../jobs/service';
import type { StorageHealth } from '../jobs/storage-health';
import { isTerminal, type Backends } from '../jobs/types';
import { JobWorker } from '../jobs/worker';
import { ApiKeyRegistry, generateDevKey, RateLimiter } from './auth';
import { AuthFailureThrottle } from './auth-throttle';
import { addAuthentication, type AuthenticateOptions } from './authenticate';
import { problemClientErrorHandler } from './client-errors';
import { ApiError, PROBLEM_CONTENT_TYPE, problemSchema } from './errors';
import { fromFastifyError, fromStoreFault } from './foreign-errors';
import { consolePlugin } from './console';
import { addMethodNotAllowed, trackRouteMethods } from './method-not-allowed';
import { addOpenApiRoute, registerOpenApi } from './openapi';
import { jobRoutes } from './routes/jobs';
import { downloadKeyRoutes } from './routes/download-keys';
import { listJobRoutes } from './routes/list';
import { callbackSecretRoutes } from './routes/callback-secret';
import { modelRoutes } from './routes/models';
import { dataDirProblem, operationRoutes } from './routes/operations';
import { addJsonParser, addRequestChecks, answerExpectations } from './request-checks';
import { jobRecordSchema } from './schemas';

/** Range accepted for volume_threshold: dBFS of the step level (docs/results.md). */
export const VOLUME_THRESHOLD_RANGE = { min: MIN_VOLUME_THRESHOLD_DB, max: MAX_VOLUME_THRESHOLD_DB };

export interface ServerOptions {
  config?: Config;
  /** Overrides applied on top of `config` (or the defaults). */
  overrides?: DeepPartial<Config>;
  analyzer?: Analyzer;
  /** Storage; default: the embedded implementation under config.dataDir. */
  backends?: Backends;
  /** Fastify logger option; default JSON logs at config.logLevel. */
  logger?: FastifyServerOptions['logger'];
  /** Start the worker pool (default true; false: accept jobs, process none). */
  startWorker?: boolean;
  /** Start the callback dispatcher (default true). */
  startDispatcher?: boolean;
  /** URL downloads and callbacks: injectable resolver / connector / keys (tests); default from config. */
  download?: DownloadDeps;
  /** HTTP server timeouts (slow clients); default HTTP_TIMEOUTS. */
  httpTimeouts?: Partial<HttpTimeouts>;
}

/** Timeouts against slow or idle clients (slowloris), in ms; docs/reliability.md. */
export interface HttpTimeouts {
  /** Whole request headers must arrive within this (408 and close otherwise). */
  headersMs: number;
  /** Whole request, body included (an upload of maxUploadBytes must make it in time). */
  requestMs: number;
  /** A socket with no traffic at all is destroyed after this. */
  connectionMs: number;
  /** Idle keep-alive sockets between requests. */
  keepAliveMs: number;
  /** How often Node checks headersMs/requestMs. */
  checkIntervalMs: number;
}
export const HTTP_TIMEOUTS: HttpTimeouts = { headersMs: 10_000, requestMs: 300_000, connectionMs: 60_000, keepAliveMs: 5_000, checkIntervalMs: 1_000 };
/** Largest request header block, bytes (431 above). */
export const MAX_HEADER_BYTES = 16 * 1024;

/** Logged requests never carry credentials (x-api-key, authorization, cookies). */
const REDACTED_LOG_PATHS = ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', 'headers["x-api-key"]', 'headers.authorization'];
function withRedaction(logger: FastifyServerOptions['logger']): FastifyServerOptions['logger'] {
  if (!logger || typeof logger !== 'object') return logger;
  const l = logger as { redact?: unknown; [k: string]: unknown };
  return l.redact ? logger : ({ ...l, redact: { paths: REDACTED_LOG_PATHS, censor: '[redacted]' } } as FastifyServerOptions['logger']);
}

export interface AurisServer {
  app: FastifyInstance;
  config: Config;
  backends: Backends;
  service: JobService;
  worker: JobWorker;
  dispatcher: CallbackDispatcher;
  sweeper: RetentionSweeper;
  metrics: JobMetrics;
  /** The development key, when no key was configured. */
  devKey: string | null;
  /** The API keys this server accepts (configured, or the development key); the streaming transports use the same. */
  keys: ApiKeyRegistry;
  /** Failed-authentication throttle per client address (the WebSocket transport counts its failures here too). */
  authThrottle: AuthFailureThrottle;
  /** http://host:port once listening. */
  url: string;
  listen(): Promise<string>;
  close(): Promise<void>;
}

export async function createServer(opts: ServerOptions = {}): Promise<AurisServer> {
  const base = opts.config ?? defaultConfig();
  const config = opts.overrides ? mergeConfig(base, opts.overrides) : base;
  const app = createFastify(config, opts);
  const access = accessControl(config, app);
  const parts = await buildServices(config, opts, app);
  await recoverJobs(parts, app);
  addProblemHandlers(app);
  await registerSecurityHeaders(app, config);
  app.addSchema(problemSchema);
  app.addSchema(jobRecordSchema);
  await registerOpenApi(app);
  addRequestChecks(app);
  addJsonParser(app);
  answerExpectations(app.server);
  addAuthentication(app, access);
  const state = { closing: false, listening: false };
  await registerRoutes(app, config, parts, () => readinessProblems(state, config, opts, parts), opts.startWorker === false ? 0 : config.concurrency);
  return serverHandle(app, config, opts, parts, access, state);
}

/** The Fastify instance: timeouts against slow clients, logs without credentials, router errors as problem+json. */
function createFastify(config: Config, opts: ServerOptions): FastifyInstance {
  const t = { ...HTTP_TIMEOUTS, ...opts.httpTimeouts };
  return Fastify({
    logger: withRedaction(opts.logger ?? { level: config.logLevel }),
    connectionTimeout: t.connectionMs,
    keepAliveTimeout: t.keepAliveMs,
    requestTimeout: t.requestMs,
    // requireHostHeader: a request without Host is answered by addRequestChecks (problem+json), not by Node (empty body).
    http: { headersTimeout: Math.min(t.headersMs, t.requestMs), requestTimeout: t.requestMs, maxHeaderSize: MAX_HEADER_BYTES, connectionsCheckingInterval: t.checkIntervalMs, requireHostHeader: false },
    bodyLimit: 1024 * 1024, // JSON bodies; uploads stream under limits.maxUploadBytes
    // X-Forwarded-For only from the configured proxies (TRUST_PROXY, docs/deploy.md); off by default.
    trustProxy: config.trustProxy.length ? config.trustProxy : false,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: true, allErrors: true, keywords: ['example'] } },
    return503OnClosing: true,
    // Router-level errors (a path parameter over 100 characters, a malformed %-escape) as problem+json too.
    frameworkErrors: (err, req, reply) => {
      const apiErr = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? new ApiError('NOT_FOUND', 'No such resource (path parameter too long).') : new ApiError('INVALID_PARAMETER', 'The request URL is malformed.');
      return (reply as unknown as FastifyReply).code(apiErr.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(apiErr.toProblem(req.url.split('?')[0].slice(0, 200))));
    },
    forceCloseConnections: 'idle',
    clientErrorHandler: problemClientErrorHandler(MAX_HEADER_BYTES),
  });
}

interface AccessControl extends AuthenticateOptions {
  /** The development key, when no key was configured. */
  devKey: string | null;
}

/** The accepted API keys (a development key when none is configured), the rate limit and the failed-auth throttle. */
function accessControl(config: Config, app: FastifyInstance): AccessControl {
  let devKey: string | null = null;
  let keys = config.apiKeys;
  if (keys.length === 0) {
    const dev = generateDevKey();
    devKey = dev.key;
    keys = [dev];
    app.log.warn(
      { api_key: dev.key, organization_id: dev.organizationId, project_id: dev.projectId },
      'no API key configured (API_KEYS / API_KEYS_FILE): generated a development key for this run',
    );
  }
  return {
    devKey,
    registry: new ApiKeyRegistry(keys),
    limiter: new RateLimiter(config.limits.rateLimitRps, config.limits.rateLimitBurst),
    throttle: new AuthFailureThrottle(config.limits.authFailureLimit, config.limits.authFailureWindowSec * 1000),
  };
}

/** What the routes and the background loops work on. */
interface Services {
  download: DownloadService;
  metrics: JobMetrics;
  backends: Backends;
  analyzer: Analyzer;
  service: JobService;
  worker: JobWorker;
  secrets: CallbackSecrets;
  dispatcher: CallbackDispatcher;
  sweeper: RetentionSweeper;
}

async function buildServices(config: Config, opts: ServerOptions, app: FastifyInstance): Promise<Services> {
  const download = await createDownloadService(config, opts.download, app.log.child({ component: 'download' })); // signing keys (generated on first start), SSRF guard
  let backendsRef: Backends | null = null;
  const metrics = new JobMetrics(() => backendsRef?.jobs ?? null);
  const backends = opts.backends ?? (await openEmbeddedBackends(config.dataDir, (m) => app.log.warn(m), { maxDeliveries: config.maxJobDeliveries }));
  backendsRef = backends;
  const analyzer = opts.analyzer ?? pipelineAnalyzer(config.modelsDir);
  const service = new JobService(backends, config, metrics);
  const worker = new JobWorker(backends, analyzer, config, metrics, app.log.child({ component: 'worker' }), download.downloader);
  service.onDeleted = (id) => worker.cancel(id);
  const secrets = await CallbackSecrets.load({ dataDir: config.dataDir, secretFile: config.callbacks.secretFile, secrets: config.callbacks.secrets });
  const dispatcher = new CallbackDispatcher(backends.events, config.callbacks, metrics, app.log.child({ component: 'callbacks' }), backends.jobs, secrets, download.guard);
  const sweeper = new RetentionSweeper(backends, service, config.sweepIntervalMs, app.log.child({ component: 'retention' }));
  return { download, metrics, backends, analyzer, service, worker, secrets, dispatcher, sweeper };
}

/** Recovery: drop orphaned blobs, re-enqueue unfinished jobs the queue does not hold. */
async function recoverJobs({ backends, sweeper }: Services, app: FastifyInstance): Promise<void> {
  const orphans = await sweeper.removeOrphans();
  if (orphans) app.log.info({ removed: orphans }, 'removed blobs of no job');
  const pending = new Set(await backends.queue.pending());
  let requeued = 0;
  for (const job of await backends.jobs.list()) {
    if (!isTerminal(job.record.status) && !pending.has(job.record.job_id)) {
      await backends.queue.enqueue(job.record.job_id);
      requeued++;
    }
  }
  if (requeued) app.log.info({ requeued }, 're-enqueued unfinished jobs');
  await sweeper.sweep();
}

/** Errors: every one as application/problem+json with a stable code. */
function addProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | ApiError, req, reply) => {
    // Ours as thrown; the job store's faults and Fastify's own errors translated (foreign-errors.ts).
    const apiErr = err instanceof ApiError ? err : fromStoreFault(err) ?? fromFastifyError(err, mediaTypeOf(req.headers['content-type']));
    if (apiErr.status >= 500) {
      // A client that reset its request is no server fault: no stack trace at error level.
      if (req.raw.destroyed || req.socket?.destroyed) req.log.debug({ err: err.message }, 'request failed after the client left');
      else req.log.error({ err }, 'request failed');
    }
    if (apiErr.retryAfter !== undefined) void reply.header('retry-after', String(apiErr.retryAfter));
    return reply.code(apiErr.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(apiErr.toProblem(req.url.split('?')[0])));
  });
  app.setNotFoundHandler((req, reply) => {
    const e = new ApiError('NOT_FOUND', `No route ${req.method} ${req.url.split('?')[0]}.`);
    return reply.code(404).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(e.toProblem(req.url.split('?')[0])));
  });
}

/** Security headers on every response, and CORS for browser apps on the configured origins. */
async function registerSecurityHeaders(app: FastifyInstance, config: Config): Promise<void> {
  // CSP is set per page by the console (src/http/console.ts).
  await app.register(fastifyHelmet, { contentSecurityPolicy: false, hsts: false, crossOriginResourcePolicy: { policy: 'same-site' } });
  // A preflight (OPTIONS) is answered here, before the API key check, which it must not need.
  if (config.corsOrigins.length) {
    await app.register(fastifyCors, {
      origin: config.corsOrigins.includes('*') ? '*' : config.corsOrigins,
      methods: ['GET', 'POST', 'DELETE'],
      allowedHeaders: ['x-api-key', 'content-type', 'idempotency-key'],
      exposedHeaders: ['location', 'retry-after', 'ratelimit', 'ratelimit-policy', 'x-auris-job-id'],
      maxAge: 600,
      strictPreflight: false,
    });
  }
}

async function registerRoutes(app: FastifyInstance, config: Config, parts: Services, notReady: () => Promise<string[]>, workers: number): Promise<void> {
  const { analyzer, backends, download, secrets, service, metrics } = parts;
  const routeMethods = trackRouteMethods(app, ['/file-processing/', '/models']);
  const storageFault = (): StorageHealth['current'] => parts.worker.storage.current;
  await app.register(jobRoutes, { config, service, listModels: () => analyzer.listModels(), volumeRange: VOLUME_THRESHOLD_RANGE, storageFault });
  await app.register(listJobRoutes, { list: () => backends.jobs.list(), storageFault }); // GET /file-processing/jobs (the project's jobs)
  await app.register(downloadKeyRoutes, { keys: download.keys }); // GET /.well-known/jwks.json, GET /verification-keys
  await app.register(callbackSecretRoutes, { secrets }); // GET /file-processing/callback-secret
  await app.register(modelRoutes, { modelsDir: config.modelsDir }); // GET /models
  addMethodNotAllowed(app, routeMethods); // e.g. PUT on a job: 405 with Allow, not 404
  addOpenApiRoute(app);
  await app.register(consolePlugin); // the web console at GET / (web/, src/http/console.ts)
  await app.register(operationRoutes, { listModels: () => analyzer.listModels(), workers, notReady, metrics: metrics.registry });
}

/** Why /readyz answers 503: shutting down, not listening yet, no models, stopped workers, unwritable storage. */
async function readinessProblems(state: { closing: boolean; listening: boolean }, config: Config, opts: ServerOptions, parts: Services): Promise<string[]> {
  const reasons: string[] = [];
  if (state.closing) reasons.push('shutting down');
  if (!state.listening) reasons.push('starting');
  if (parts.analyzer.listModels().length === 0) reasons.push(`no models installed in ${config.modelsDir}`);
  if (config.concurrency > 0 && opts.startWorker !== false && !parts.worker.isRunning) reasons.push('workers not running');
  if (!opts.backends) {
    const storage = await dataDirProblem(config.dataDir); // disk full, read-only, replaced by a file
    if (storage) reasons.push(storage);
  }
  // A nearly full disk takes the probe's few bytes but not a job's results or an upload.
  const fault = parts.worker.storage.current;
  if (fault && !reasons.some((r) => r.includes('not writable'))) reasons.push(`the job store cannot be written (${fault.errno}) since ${fault.since}`);
  return reasons;
}

/** listen() starts the background loops once the port is bound; close() stops everything in order. */
function serverHandle(
  app: FastifyInstance,
  config: Config,
  opts: ServerOptions,
  parts: Services,
  access: AccessControl,
  state: { closing: boolean; listening: boolean },
): AurisServer {
  const { backends, service, worker, dispatcher, sweeper, metrics, analyzer } = parts;
  const server: AurisServer = {
    app,
    config,
    backends,
    service,
    worker,
    dispatcher,
    sweeper,
    metrics,
    devKey: access.devKey,
    keys: access.registry,
    authThrottle: access.throttle,
    url: '',
    async listen() {
      await app.listen({ host: config.host, port: config.port });
      const addr = app.server.address() as AddressInfo;
      const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
      server.url = `http://${host}:${addr.port}`;
      state.listening = true;
      if (opts.startWorker !== false) worker.start();
      if (opts.startDispatcher !== false) dispatcher.start();
      sweeper.start();
      return server.url;
    },
    async close() {
      if (state.closing) return;
      state.closing = true;
      await app.close();
      await worker.stop();
      await dispatcher.stop();
      await sweeper.stop();
      await backends.close();
      await analyzer.close?.();
    },
  };
  return server;
}

const mediaTypeOf = (header: string | undefined): string => (header ?? '').split(';')[0]!.trim().toLowerCase();

