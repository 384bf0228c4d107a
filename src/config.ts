/**
 * One typed configuration for the service, from command-line flags and environment
 * variables (flags win over env, env wins over defaults). Every option is listed in
 * OPTIONS below with its flag, env var, default and meaning; docs/api.md mirrors it.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseCallbackSecrets } from './callbacks/signing';
import { parseAllowlist } from './download/ssrf';
import { defaultModelsDir } from './inference/env';

export interface ApiKeyEntry {
  key: string;
  organizationId: string;
  projectId: string;
}

export interface Limits {
  /** Direct upload body cap, bytes (spec: 15 MB). */
  maxUploadBytes: number;
  /** Audio duration cap, seconds, combined over the processed channels (spec: 1 hour). */
  maxAudioDurationSec: number;
  /** JSON result cap, bytes (spec: 30 MB). */
  maxResultBytes: number;
  /** URL method download cap, bytes. */
  maxDownloadBytes: number;
  /** URL method download timeout (whole transfer), ms. */
  downloadTimeoutMs: number;
  /** Largest accepted output_period, ms (a multiple of 64). */
  maxOutputPeriodMs: number;
  /** Per-key request rate: sustained requests per second on the job endpoints. */
  rateLimitRps: number;
  /** Per-key request burst (token bucket size). */
  rateLimitBurst: number;
  /** Per-key cap on unfinished (queued + processing) jobs. */
  maxActiveJobsPerKey: number;
  /** Requests with a missing or wrong API key per client address and window before it gets 429. */
  authFailureLimit: number;
  /** The window of authFailureLimit, seconds. */
  authFailureWindowSec: number;
}

export interface CallbackConfig {
  /** Per-attempt timeout, ms (spec: 10 s). */
  timeoutMs: number;
  /** Retries after a 5xx, a timeout or a network error (spec: 3). */
  retries: number;
  /** First retry delay, ms; doubles on each retry. */
  backoffMs: number;
  /** Callbacks delivered at the same time (a slow receiver never blocks the others). */
  concurrency: number;
  /** Per-project signing secrets, `organization_id:project_id:whsec_...` (others: derived from the secret file). */
  secrets: string[];
  /** Master secret the per-project secrets are derived from; default DATA_DIR/keys/callback-secret, generated on first start. */
  secretFile?: string;
}

/** URL method downloads: signing keys and SSRF allowlist (docs/download.md). */
export interface DownloadConfig {
  /** PEM private key (EC P-521) that signs download requests; default DATA_DIR/keys/download-signing-key.pem, generated on first start. */
  signingKeyFile?: string;
  /** More keys published for verification (PEM files, public or private): rotation. */
  verificationKeyFiles: string[];
  /** Lifetime of a download token (exp - iat), seconds. */
  tokenTtlSec: number;
  /** Time to open one connection (TCP + TLS), ms. */
  connectTimeoutMs: number;
  /** Host names and CIDR ranges that downloads and callbacks may reach although they are private (on-prem). */
  urlAllowlist: string[];
}

export interface StreamingConfig {
  /** Concurrent live streams in this process. */
  maxStreams: number;
  /** Concurrent live streams per API key. */
  maxStreamsPerKey: number;
  /** A gRPC stream must send its config within this, ms. */
  configTimeoutMs: number;
  /** A stream that sends no audio for this long ends with IDLE_TIMEOUT, ms (0: never). */
  idleTimeoutMs: number;
  /** Lifetime of a stream token (POST /stream-tokens), seconds. */
  tokenTtlSec: number;
}

/** Connections to the gRPC port (src/grpc/connections.ts). */
export interface GrpcConnectionConfig {
  /** Open gRPC connections in total (default: a quarter of the descriptor limit). */
  maxConnections: number;
  /** Open gRPC connections per client address (IPv6: per /64). */
  maxConnectionsPerAddress: number;
  /** A connection must send the HTTP/2 preface within this, ms. */
  handshakeTimeoutMs: number;
  /** A connection with no call for this long is closed, ms. */
  idleTimeoutMs: number;
  /** Each connection's HTTP/2 receive window, shared by its streams, bytes. */
  connectionWindowBytes: number;
}

export interface Config {
  host: string;
  port: number;
  grpcPort: number;
  dataDir: string;
  modelsDir: string;
  apiKeys: ApiKeyEntry[];
  apiKeysFile?: string;
  /** Distributed mode: NATS JetStream server URL(s), comma-separated; unset: the embedded store. */
  natsUrl?: string;
  /** What this process runs: api (REST + callbacks), worker (jobs), all (both; the only role without NATS). */
  role: 'api' | 'worker' | 'all';
  /** Distributed mode: replicas of every stream and bucket (1 on a single server, 3 or 5 on a cluster). */
  natsReplicas: number;
  /** Distributed mode: a job whose worker is silent this long is delivered again, ms (later deliveries back off). */
  natsAckWaitMs: number;
  /** Distributed mode: deliveries of one job before it fails with JOB_INTERRUPTED. */
  natsMaxDeliver: number;
  /** Distributed mode: name prefix of the streams and buckets (deployments sharing a cluster). */
  natsPrefix: string;
  /** Jobs processed at the same time by this process. */
  concurrency: number;
  /** Finished jobs and their results are purged this long after they finish, seconds. */
  retentionSec: number;
  /** How often the retention sweeper runs, ms. */
  sweepIntervalMs: number;
  /** A job interrupted this many times (crash, restart) fails with JOB_INTERRUPTED. */
  maxJobAttempts: number;
  /** Embedded mode: deliveries of a job whose processing keeps failing before it fails with PROCESSING_FAILED (NATS: natsMaxDeliver). */
  maxJobDeliveries: number;
  /** Wait before a failed delivery is retried, ms; doubles with each delivery (at most 5 minutes). */
  jobRetryBackoffMs: number;
  /** Queued jobs a worker holds ahead to choose from, round-robin between projects (src/jobs/fair-queue.ts). */
  fairQueueWindow: number;
  limits: Limits;
  /** Live streams (gRPC and WebSocket together; docs/streaming.md). */
  streaming: StreamingConfig;
  grpc: GrpcConnectionConfig;
  callbacks: CallbackConfig;
  download: DownloadConfig;
  /** Browser origins allowed to call the API (CORS); empty: none, `*`: any. */
  corsOrigins: string[];
  /** Reverse proxies whose X-Forwarded-For is believed (addresses, CIDR ranges, or loopback/linklocal/uniquelocal); empty: none. */
  trustProxy: string[];
  logLevel: string;
}

type Kind = 'string' | 'int' | 'number' | 'keys' | 'list';

interface OptionDef {
  /** Dotted path in Config. */
  path: string;
  flag: string;
  env: string;
  kind: Kind;
  def: () => unknown;
  doc: string;
  min?: number;
  /** Other accepted spellings of the flag. */
  aliases?: string[];
}

const MiB = 1024 * 1024;

/** Every configuration option: flag, env var, default, meaning. */
export const OPTIONS: readonly OptionDef[] = [
  { path: 'host', flag: '--host', env: 'HOST', kind: 'string', def: () => '127.0.0.1', doc: 'REST listen address (use 0.0.0.0 to listen on all interfaces, e.g. in a container)' },
  { path: 'port', flag: '--port', env: 'PORT', kind: 'int', min: 0, def: () => 8080, doc: 'REST port' },
  { path: 'grpcPort', flag: '--grpc-port', env: 'GRPC_PORT', kind: 'int', min: 0, def: () => 50051, doc: 'gRPC streaming port (live analysis, docs/streaming.md)' },
  { path: 'dataDir', flag: '--data-dir', env: 'DATA_DIR', kind: 'string', def: () => resolve('data'), doc: 'where jobs, queued work, uploads and results are kept' },
  { path: 'modelsDir', flag: '--models-dir', env: 'MODELS_DIR', kind: 'string', def: () => defaultModelsDir(), doc: 'model directory (<dir>/<name>/manifest.json; default $AURIS_MODELS_DIR or the package models/)' },
  { path: 'apiKeys', flag: '--api-keys', env: 'API_KEYS', kind: 'keys', def: () => [], doc: 'comma-separated key:organization_id:project_id entries' },
  { path: 'apiKeysFile', flag: '--api-keys-file', env: 'API_KEYS_FILE', kind: 'string', def: () => undefined, doc: 'file with one key:organization_id:project_id per line (# comments)' },
  { path: 'natsUrl', flag: '--nats', aliases: ['--nats-url'], env: 'NATS_URL', kind: 'string', def: () => undefined, doc: 'NATS JetStream URL(s), comma-separated: distributed mode (docs/deploy.md); unset: embedded store' },
  { path: 'role', flag: '--role', env: 'ROLE', kind: 'string', def: () => 'all', doc: 'api (REST + callbacks), worker (jobs) or all; api and worker need --nats' },
  { path: 'natsReplicas', flag: '--nats-replicas', env: 'NATS_REPLICAS', kind: 'int', min: 1, def: () => 1, doc: 'replicas of the JetStream streams and buckets (3 or 5 on a cluster)' },
  { path: 'natsAckWaitMs', flag: '--nats-ack-wait-ms', env: 'NATS_ACK_WAIT_MS', kind: 'int', min: 1000, def: () => 30_000, doc: 'a job whose worker is silent this long is delivered again, ms' },
  { path: 'natsMaxDeliver', flag: '--nats-max-deliver', env: 'NATS_MAX_DELIVER', kind: 'int', min: 2, def: () => 5, doc: 'deliveries of a job before it fails with JOB_INTERRUPTED' },
  { path: 'natsPrefix', flag: '--nats-prefix', env: 'NATS_PREFIX', kind: 'string', def: () => 'auris', doc: 'name prefix of the JetStream streams and buckets' },
  { path: 'concurrency', flag: '--concurrency', env: 'CONCURRENCY', kind: 'int', min: 0, def: () => availableParallelism(), doc: 'jobs processed at the same time (0: accept jobs but process none)' },
  { path: 'retentionSec', flag: '--retention', env: 'RETENTION_SECONDS', kind: 'number', min: 0, def: () => 24 * 3600, doc: 'seconds after a job finishes before the job and its results are purged' },
  { path: 'sweepIntervalMs', flag: '--sweep-interval-ms', env: 'SWEEP_INTERVAL_MS', kind: 'int', min: 10, def: () => 60_000, doc: 'how often expired jobs are purged, ms' },
  { path: 'maxJobAttempts', flag: '--max-job-attempts', env: 'MAX_JOB_ATTEMPTS', kind: 'int', min: 1, def: () => 3, doc: 'processing attempts (restarts included) before a job fails with JOB_INTERRUPTED' },
  { path: 'maxJobDeliveries', flag: '--max-job-deliveries', env: 'MAX_JOB_DELIVERIES', kind: 'int', min: 1, def: () => 5, doc: 'embedded mode: deliveries of a job whose processing keeps failing before it fails with PROCESSING_FAILED (distributed: NATS_MAX_DELIVER)' },
  { path: 'jobRetryBackoffMs', flag: '--job-retry-backoff-ms', env: 'JOB_RETRY_BACKOFF_MS', kind: 'int', min: 0, def: () => 1000, doc: 'wait before a failed delivery of a job is retried, ms (doubles each time, at most 5 min)' },
  { path: 'fairQueueWindow', flag: '--fair-queue-window', env: 'FAIR_QUEUE_WINDOW', kind: 'int', min: 1, def: () => 32, doc: 'queued jobs a worker pulls ahead and serves round-robin between projects (at least CONCURRENCY)' },
  { path: 'limits.maxUploadBytes', flag: '--max-upload-bytes', env: 'MAX_UPLOAD_BYTES', kind: 'int', min: 1, def: () => 15 * MiB, doc: 'direct upload size limit, bytes (413 above)' },
  { path: 'limits.maxAudioDurationSec', flag: '--max-audio-duration', env: 'MAX_AUDIO_DURATION_SECONDS', kind: 'number', min: 1, def: () => 3600, doc: 'audio duration limit over all processed channels, seconds' },
  { path: 'limits.maxResultBytes', flag: '--max-result-bytes', env: 'MAX_RESULT_BYTES', kind: 'int', min: 1, def: () => 30 * MiB, doc: 'JSON result size limit, bytes' },
  { path: 'limits.maxDownloadBytes', flag: '--max-download-bytes', env: 'MAX_DOWNLOAD_BYTES', kind: 'int', min: 1, def: () => 1024 * MiB, doc: 'URL method download size limit, bytes' },
  { path: 'limits.downloadTimeoutMs', flag: '--download-timeout-ms', env: 'DOWNLOAD_TIMEOUT_MS', kind: 'int', min: 1, def: () => 300_000, doc: 'URL method download timeout, ms' },
  { path: 'limits.maxOutputPeriodMs', flag: '--max-output-period', env: 'MAX_OUTPUT_PERIOD_MS', kind: 'int', min: 64, def: () => 3_600_000, doc: 'largest accepted output_period, ms (a multiple of 64)' },
  { path: 'limits.rateLimitRps', flag: '--rate-limit-rps', env: 'RATE_LIMIT_RPS', kind: 'number', min: 0.001, def: () => 50, doc: 'per-key sustained request rate on the job endpoints, requests/s' },
  { path: 'limits.rateLimitBurst', flag: '--rate-limit-burst', env: 'RATE_LIMIT_BURST', kind: 'int', min: 1, def: () => 500, doc: 'per-key request burst' },
  { path: 'limits.maxActiveJobsPerKey', flag: '--max-active-jobs', env: 'MAX_ACTIVE_JOBS_PER_KEY', kind: 'int', min: 1, def: () => 200, doc: 'per-key limit of unfinished (queued + processing) jobs (429 TOO_MANY_ACTIVE_JOBS above)' },
  { path: 'limits.authFailureLimit', flag: '--auth-failure-limit', env: 'AUTH_FAILURE_LIMIT', kind: 'int', min: 1, def: () => 20, doc: 'requests with a missing or wrong API key per client address (IPv6: per /64) and window before 429 TOO_MANY_AUTH_FAILURES' },
  { path: 'limits.authFailureWindowSec', flag: '--auth-failure-window', env: 'AUTH_FAILURE_WINDOW_SECONDS', kind: 'number', min: 1, def: () => 60, doc: 'the failed-authentication window, seconds (the address is refused until it has passed)' },
  { path: 'streaming.maxStreams', flag: '--max-streams', env: 'MAX_STREAMS', kind: 'int', min: 1, def: () => 1000, doc: 'concurrent live streams (gRPC + WebSocket) in this process' },
  { path: 'streaming.maxStreamsPerKey', flag: '--max-streams-per-key', env: 'MAX_STREAMS_PER_KEY', kind: 'int', min: 1, def: () => 100, doc: 'concurrent live streams per API key (TOO_MANY_STREAMS above)' },
  { path: 'streaming.configTimeoutMs', flag: '--stream-config-timeout-ms', env: 'STREAM_CONFIG_TIMEOUT_MS', kind: 'int', min: 100, def: () => 10_000, doc: 'a gRPC stream must send its config within this, ms (IDLE_TIMEOUT)' },
  { path: 'streaming.idleTimeoutMs', flag: '--stream-idle-timeout-ms', env: 'STREAM_IDLE_TIMEOUT_MS', kind: 'int', min: 0, def: () => 30_000, doc: 'a live stream that sends no audio this long ends with IDLE_TIMEOUT, ms (0: never)' },
  { path: 'streaming.tokenTtlSec', flag: '--stream-token-ttl', env: 'STREAM_TOKEN_TTL_SECONDS', kind: 'int', min: 1, def: () => 60, doc: 'lifetime of a single-use stream token (POST /stream-tokens), seconds' },
  { path: 'grpc.maxConnections', flag: '--grpc-max-connections', env: 'GRPC_MAX_CONNECTIONS', kind: 'int', min: 1, def: () => defaultGrpcConnections(), doc: 'open connections to the gRPC port in total (default: a quarter of the open-file limit, at most 10000); silent ones make room for new ones' },
  { path: 'grpc.maxConnectionsPerAddress', flag: '--grpc-max-connections-per-address', env: 'GRPC_MAX_CONNECTIONS_PER_ADDRESS', kind: 'int', min: 1, def: () => 64, doc: 'open connections to the gRPC port per client address (IPv6: per /64)' },
  { path: 'grpc.handshakeTimeoutMs', flag: '--grpc-handshake-timeout-ms', env: 'GRPC_HANDSHAKE_TIMEOUT_MS', kind: 'int', min: 100, def: () => 10_000, doc: 'a gRPC connection that has not sent the HTTP/2 preface within this is closed, ms' },
  { path: 'grpc.idleTimeoutMs', flag: '--grpc-idle-timeout-ms', env: 'GRPC_IDLE_TIMEOUT_MS', kind: 'int', min: 100, def: () => 300_000, doc: 'a gRPC connection without a call for this long is closed (GOAWAY), ms' },
  { path: 'grpc.connectionWindowBytes', flag: '--grpc-connection-window-bytes', env: 'GRPC_CONNECTION_WINDOW_BYTES', kind: 'int', min: 65_535, def: () => 16 * 1024 * 1024, doc: "each gRPC connection's HTTP/2 receive window, shared by its streams, bytes (each stream's own stays 64 KiB; at most 2 GiB - 1)" },
  { path: 'callbacks.timeoutMs', flag: '--callback-timeout-ms', env: 'CALLBACK_TIMEOUT_MS', kind: 'int', min: 1, def: () => 10_000, doc: 'callback attempt timeout, ms' },
  { path: 'callbacks.retries', flag: '--callback-retries', env: 'CALLBACK_RETRIES', kind: 'int', min: 0, def: () => 3, doc: 'callback retries after 5xx / timeout / network error' },
  { path: 'callbacks.backoffMs', flag: '--callback-backoff-ms', env: 'CALLBACK_BACKOFF_MS', kind: 'int', min: 0, def: () => 1000, doc: 'first callback retry delay, ms (doubles each retry)' },
  { path: 'callbacks.concurrency', flag: '--callback-concurrency', env: 'CALLBACK_CONCURRENCY', kind: 'int', min: 1, def: () => 64, doc: 'callbacks delivered at the same time' },
  { path: 'callbacks.secrets', flag: '--callback-secrets', env: 'CALLBACK_SECRETS', kind: 'list', def: () => [], doc: 'comma-separated organization_id:project_id:whsec_... callback signing secrets (others derived from the secret file)' },
  { path: 'callbacks.secretFile', flag: '--callback-secret-file', env: 'CALLBACK_SECRET_FILE', kind: 'string', def: () => undefined, doc: 'master secret (base64) the per-project callback signing secrets derive from (default DATA_DIR/keys/callback-secret, generated on first start)' },
  { path: 'download.signingKeyFile', flag: '--signing-key-file', env: 'SIGNING_KEY_FILE', kind: 'string', def: () => undefined, doc: 'PEM EC P-521 private key that signs URL downloads (default DATA_DIR/keys/download-signing-key.pem, generated on first start)' },
  { path: 'download.verificationKeyFiles', flag: '--verification-key-files', env: 'VERIFICATION_KEY_FILES', kind: 'list', def: () => [], doc: 'comma-separated PEM keys also published in the JWKS (key rotation)' },
  { path: 'download.tokenTtlSec', flag: '--download-token-ttl', env: 'DOWNLOAD_TOKEN_TTL_SECONDS', kind: 'int', min: 1, def: () => 300, doc: 'lifetime of the signed download token (exp - iat), seconds' },
  { path: 'download.connectTimeoutMs', flag: '--download-connect-timeout-ms', env: 'DOWNLOAD_CONNECT_TIMEOUT_MS', kind: 'int', min: 1, def: () => 10_000, doc: 'URL download connect timeout (TCP + TLS), ms' },
  { path: 'download.urlAllowlist', flag: '--url-allowlist', env: 'URL_ALLOWLIST', kind: 'list', def: () => [], doc: 'comma-separated hosts / CIDR ranges (hosts and addresses may name a :port) that downloads and callbacks may reach although private (on-prem)' },
  { path: 'corsOrigins', flag: '--cors-origins', env: 'CORS_ORIGINS', kind: 'list', def: () => [], doc: 'comma-separated browser origins allowed to call the API (CORS), * for any; unset: none' },
  { path: 'trustProxy', flag: '--trust-proxy', env: 'TRUST_PROXY', kind: 'list', def: () => [], doc: 'comma-separated addresses / CIDR ranges (or loopback, linklocal, uniquelocal) of reverse proxies whose X-Forwarded-For names the client address (throttling, logs); unset: X-Forwarded-For is ignored' },
  { path: 'logLevel', flag: '--log-level', env: 'LOG_LEVEL', kind: 'string', def: () => 'info', doc: 'fatal, error, warn, info, debug, trace or silent' },
];

/** The soft open-file limit of this process (Linux /proc), or undefined where it cannot be read. */
export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** A quarter of the descriptors for gRPC connections: the rest stays for REST, job files and models. */
function defaultGrpcConnections(): number {
  const limit = openFileLimit() ?? 1024;
  return Math.max(16, Math.min(10_000, Math.floor(limit / 4)));
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses "key:org:project" entries separated by commas or newlines; '#' starts a comment line. */
export function parseApiKeys(text: string, origin: string): ApiKeyEntry[] {
  const out: ApiKeyEntry[] = [];
  for (const raw of text.split(/[,\n]/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const parts = line.split(':');
    if (parts.length !== 3 || parts.some((p) => p.trim() === '')) {
      throw new ConfigError(`${origin}: API key entries must be key:organization_id:project_id (got an entry with ${parts.length} part(s))`);
    }
    const [key, organizationId, projectId] = parts.map((p) => p.trim()) as [string, string, string];
    if (key.length < 8) throw new ConfigError(`${origin}: API keys must be at least 8 characters`);
    out.push({ key, organizationId, projectId });
  }
  return out;
}

/**
 * An env value with an inline comment (`HOST=127.0.0.1   # behind the proxy`) is refused: systemd's
 * EnvironmentFile and `docker --env-file` keep the comment as part of the value, so the service would
 * otherwise run with a setting nobody wrote (a host it cannot listen on, a path that does not exist).
 */
function withoutInlineComment(value: string, name: string): string {
  if (/\s#/.test(value)) {
    throw new ConfigError(
      `env ${name}: ${JSON.stringify(value)} holds an inline comment; environment files (systemd EnvironmentFile, docker --env-file) keep it as part of the value: put the comment on a line of its own`,
    );
  }
  return value;
}

function convert(def: OptionDef, value: string, origin: string): unknown {
  switch (def.kind) {
    case 'string':
      return value;
    case 'keys':
      return parseApiKeys(value, origin);
    case 'list':
      return value.split(',').map((v) => v.trim()).filter((v) => v !== '');
    case 'int':
    case 'number': {
      const n = Number(value);
      if (value.trim() === '' || !Number.isFinite(n) || (def.kind === 'int' && !Number.isInteger(n))) {
        throw new ConfigError(`${origin}: expected ${def.kind === 'int' ? 'an integer' : 'a number'}, got ${JSON.stringify(value)}`);
      }
      if (def.min !== undefined && n < def.min) throw new ConfigError(`${origin}: must be >= ${def.min}`);
      return n;
    }
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let obj = target;
  for (const p of parts.slice(0, -1)) {
    obj[p] ??= {};
    obj = obj[p] as Record<string, unknown>;
  }
  obj[parts[parts.length - 1]!] = value;
}

/** Usage text for `serve --help`: one aligned row per option (columns as wide as their longest entry). */
export function usage(): string {
  const rows = OPTIONS.map((o) => {
    const d = o.def();
    return [o.flag, o.env, d === undefined || Array.isArray(d) ? '-' : String(d), o.doc] as const;
  });
  const width = [0, 1, 2].map((c) => Math.max(...rows.map((r) => r[c]!.length)));
  const lines = ['Usage: auris serve [options]', '', 'Options (flag / environment variable, default):'];
  for (const r of rows) lines.push(`  ${r[0].padEnd(width[0]!)}  ${r[1].padEnd(width[1]!)}  ${r[2].padEnd(width[2]!)}  ${r[3]}`);
  return lines.join('\n');
}

/**
 * Builds the configuration from flags (`--port 8080` or `--port=8080`) and env.
 * Unknown flags are an error. API keys from API_KEYS and API_KEYS_FILE are merged.
 */
export function loadConfig(argv: readonly string[] = [], env: NodeJS.ProcessEnv = process.env): Config {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf('=');
    const given = eq >= 0 ? arg.slice(0, eq) : arg;
    const name = OPTIONS.find((o) => o.aliases?.includes(given))?.flag ?? given;
    if (!OPTIONS.some((o) => o.flag === name)) throw new ConfigError(`unknown option ${name}\n\n${usage()}`);
    let value: string | undefined;
    if (eq >= 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      i++;
    }
    if (value === undefined) throw new ConfigError(`option ${name} needs a value`);
    flags.set(name, value);
  }

  const cfg: Record<string, unknown> = {};
  for (const o of OPTIONS) {
    let value: unknown = o.def();
    const fromEnv = env[o.env];
    if (fromEnv !== undefined && fromEnv !== '') value = convert(o, withoutInlineComment(fromEnv, o.env), `env ${o.env}`);
    const fromFlag = flags.get(o.flag);
    if (fromFlag !== undefined) value = convert(o, fromFlag, `flag ${o.flag}`);
    if (value !== undefined) setPath(cfg, o.path, value);
  }
  const config = cfg as unknown as Config;
  config.dataDir = resolve(config.dataDir);
  config.modelsDir = resolve(config.modelsDir);
  if (config.apiKeysFile) {
    let text: string;
    try {
      text = readFileSync(config.apiKeysFile, 'utf8');
    } catch (err) {
      throw new ConfigError(`API_KEYS_FILE ${config.apiKeysFile}: ${(err as Error).message}`);
    }
    config.apiKeys = [...config.apiKeys, ...parseApiKeys(text, `API_KEYS_FILE ${config.apiKeysFile}`)];
  }
  try {
    parseAllowlist(config.download.urlAllowlist);
  } catch (err) {
    throw new ConfigError(`URL_ALLOWLIST: ${(err as Error).message}`);
  }
  try {
    parseCallbackSecrets(config.callbacks.secrets);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  for (const o of config.corsOrigins) {
    if (o !== '*' && !isOrigin(o)) throw new ConfigError(`CORS_ORIGINS: ${JSON.stringify(o)} is not an origin (scheme://host[:port]) or *`);
  }
  for (const p of config.trustProxy) {
    if (!isProxySpec(p)) throw new ConfigError(`TRUST_PROXY: ${JSON.stringify(p)} is not an address, a CIDR range, loopback, linklocal or uniquelocal`);
  }
  if (config.limits.maxOutputPeriodMs % 64 !== 0) throw new ConfigError('MAX_OUTPUT_PERIOD_MS must be a multiple of 64');
  if (!['api', 'worker', 'all'].includes(config.role)) throw new ConfigError(`ROLE must be api, worker or all (got ${JSON.stringify(config.role)})`);
  if (config.role !== 'all' && !config.natsUrl) throw new ConfigError(`role ${config.role} needs distributed mode: set --nats / NATS_URL`);
  const seen = new Set<string>();
  for (const k of config.apiKeys) {
    if (seen.has(k.key)) throw new ConfigError('the same API key is configured twice');
    seen.add(k.key);
  }
  return config;
}

/** An entry of TRUST_PROXY: what Fastify's trustProxy (proxy-addr) accepts, checked here so a typo fails at start. */
function isProxySpec(s: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(s)) return true;
  const [addr, bits, ...rest] = s.split('/');
  if (rest.length || !addr || isIP(addr) === 0) return false;
  if (bits === undefined) return true;
  const max = isIP(addr) === 4 ? 32 : 128;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max;
}

function isOrigin(s: string): boolean {
  try {
    return new URL(s).origin === s;
  } catch {
    return false;
  }
}

export type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? (T[K] extends unknown[] ? T[K] : DeepPartial<T[K]>) : T[K] };

/** Deep merge of plain objects (arrays and other values are replaced). */
export function mergeConfig<T>(base: T, over: DeepPartial<T>): T {
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(over as Record<string, unknown>)) {
    if (v === undefined) continue;
    const cur = out[k];
    if (v && typeof v === 'object' && !Array.isArray(v) && cur && typeof cur === 'object' && !Array.isArray(cur)) {
      out[k] = mergeConfig(cur, v as DeepPartial<typeof cur>);
    } else out[k] = v;
  }
  return out as T;
}

/** The defaults (no flags, no env), with overrides (for tests and embedding). */
export function defaultConfig(overrides: DeepPartial<Config> = {}): Config {
  return mergeConfig(loadConfig([], {}), overrides);
}
