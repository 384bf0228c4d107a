/**
 * Distributed mode: the four backends on NATS JetStream.
 *
 *   <PREFIX>_JOBS            work-queue stream, subject <prefix>.jobs.<jobId>   (JobQueue)
 *     consumer "workers"     durable pull, explicit ack, ack wait + backoff, max_deliver
 *   <PREFIX>_JOBS_EXHAUSTED  max-deliveries advisories of "workers"            (jobs marked failed)
 *   <PREFIX>_EVENTS          work-queue stream, subject <prefix>.events.job-finished (EventBus)
 *     consumer "callbacks"   durable pull, explicit ack (callback dispatchers)
 *   KV  <prefix>_jobs        job records, revision-checked updates             (JobStore)
 *   OBJ <prefix>_blobs       uploads and results                               (BlobStore)
 *   KV  <prefix>_stream_tokens  browsers' single-use stream tokens (API nodes; stream-tokens.ts, opened by src/app.ts)
 *   KV  <prefix>_nodes       signing-key fingerprints (shared-keys.ts, opened by auris serve)
 *
 * Every node creates what is missing on start. See docs/deploy.md.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../../config';
import type { Backends } from '../types';
import { NatsBlobStore } from './blob-store';
import { isUnavailable, NatsConn, type NatsLogger, silentLogger, sleep } from './connection';
import { NatsEventBus } from './event-bus';
import { ExhaustedJobHandler } from './exhausted';
import { NatsJobStore } from './job-store';
import { NatsJobQueue } from './queue';
import { consumerConfigs, DEFAULT_SETTINGS, ensureConsumer, ensureStream, names, type NatsSettings, streamConfigs } from './settings';

export { NatsBlobStore, NatsConn, NatsEventBus, NatsJobQueue, NatsJobStore, ExhaustedJobHandler };
export { DEFAULT_SETTINGS, names, type NatsSettings } from './settings';

export interface NatsBackendOptions extends Partial<NatsSettings> {
  /** nats://host:port, or several separated by commas (seed servers of a cluster). */
  servers: string | string[];
  /** Seconds a finished job is kept (expires_at of jobs failed for running out of deliveries). */
  retentionSec: number;
  /** Where blobs are copied for the decoder (default: the OS temp dir). */
  tmpDir?: string;
  /** Orphan cleanup leaves objects younger than this alone, ms (default 15 min). */
  orphanGraceMs?: number;
  /** Client name (monitoring). */
  name?: string;
  reconnectWaitMs?: number;
  requestTimeoutMs?: number;
  /** How long one worker pull waits on the server, ms. */
  pullExpiresMs?: number;
  /** How long start-up waits for JetStream to become available, ms (default 2 min). */
  setupTimeoutMs?: number;
  log?: NatsLogger;
}

export interface NatsBackends extends Backends {
  conn: NatsConn;
  settings: NatsSettings;
  jobs: NatsJobStore;
  queue: NatsJobQueue;
  blobs: NatsBlobStore;
  events: NatsEventBus;
  exhausted: ExhaustedJobHandler;
}

export async function openNatsBackends(opts: NatsBackendOptions): Promise<NatsBackends> {
  const log = opts.log ?? silentLogger;
  const settings: NatsSettings = {
    prefix: opts.prefix ?? DEFAULT_SETTINGS.prefix,
    replicas: opts.replicas ?? DEFAULT_SETTINGS.replicas,
    ackWaitMs: opts.ackWaitMs ?? DEFAULT_SETTINGS.ackWaitMs,
    maxDeliver: opts.maxDeliver ?? DEFAULT_SETTINGS.maxDeliver,
    eventsAckWaitMs: opts.eventsAckWaitMs ?? DEFAULT_SETTINGS.eventsAckWaitMs,
  };
  if (settings.maxDeliver < 2) throw new Error('NATS max_deliver must be at least 2');
  if (settings.replicas < 1 || settings.replicas > 5) throw new Error('NATS replicas must be 1..5');
  const n = names(settings.prefix);
  const conn = await NatsConn.open({
    servers: opts.servers,
    name: opts.name,
    reconnectWaitMs: opts.reconnectWaitMs,
    requestTimeoutMs: opts.requestTimeoutMs,
    log,
  });
  try {
    // JetStream may still be electing leaders (a cluster starting up): retry while it says "unavailable".
    await whileUnavailable(log, opts.setupTimeoutMs ?? 120_000, async () => {
      for (const cfg of streamConfigs(n, settings)) await ensureStream(conn.jsm, cfg, log);
      for (const { stream, config } of consumerConfigs(n, settings)) await ensureConsumer(conn.jsm, stream, config, log);
    });
    const jobs = await whileUnavailable(log, opts.setupTimeoutMs ?? 120_000, () => NatsJobStore.open(conn, n.jobsBucket, settings.replicas, log));
    const blobs = await whileUnavailable(log, opts.setupTimeoutMs ?? 120_000, () =>
      NatsBlobStore.open(
        conn,
        n.blobsBucket,
        settings.replicas,
        { tmpDir: opts.tmpDir ?? join(tmpdir(), 'auris-blobs'), orphanGraceMs: opts.orphanGraceMs ?? 15 * 60_000 },
        log,
      ),
    );
    const queue = new NatsJobQueue(conn, n, settings, log, { pullExpiresMs: opts.pullExpiresMs });
    const events = new NatsEventBus(conn, n, settings, log);
    const exhausted = new ExhaustedJobHandler(conn, n, { jobs, queue, blobs, events }, opts.retentionSec, log);
    exhausted.start();
    let closed = false;
    return {
      conn,
      settings,
      jobs,
      queue,
      blobs,
      events,
      exhausted,
      close: async () => {
        if (closed) return;
        closed = true;
        await queue.close();
        await events.close();
        await exhausted.stop();
        jobs.close();
        await conn.close();
      },
    };
  } catch (err) {
    await conn.close();
    throw err;
  }
}

/** Runs `fn`, again after a pause while it fails with an "unavailable" error, until `timeoutMs`. */
async function whileUnavailable<T>(log: NatsLogger, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (!isUnavailable(err) || Date.now() > deadline) throw err;
      if (i % 10 === 0) log.warn({ err: (err as Error).message }, 'JetStream not available yet; retrying');
      await sleep(500);
    }
  }
}

/** The backend options of `auris serve` (flags / env, see src/config.ts). */
export function natsOptionsFromConfig(config: Config, log?: NatsLogger): NatsBackendOptions {
  if (!config.natsUrl) throw new Error('distributed mode needs a NATS URL');
  return {
    servers: config.natsUrl,
    prefix: config.natsPrefix,
    replicas: config.natsReplicas,
    ackWaitMs: config.natsAckWaitMs,
    maxDeliver: config.natsMaxDeliver,
    retentionSec: config.retentionSec,
    tmpDir: join(config.dataDir, 'tmp'),
    name: `auris-${config.role}`,
    log,
  };
}

/** What a role runs (createServer options): api = REST + callbacks, worker = jobs, all = both. */
export function roleServerOptions(role: Config['role']): { startWorker: boolean; startDispatcher: boolean } {
  return { startWorker: role !== 'api', startDispatcher: role !== 'worker' };
}

/**
 * A logger usable before the server's logger exists: JSON lines on stderr until `attach`
 * hands it a real one, with pino's numeric levels so the log has one format throughout.
 */
const PINO_LEVELS: Record<string, number> = { info: 30, warn: 40, error: 50 };

export function deferredLogger(): NatsLogger & { attach(log: NatsLogger): void } {
  let target: NatsLogger | null = null;
  const write = (level: string) => (obj: object, msg: string) => {
    if (target) return (target as unknown as Record<string, (o: object, m: string) => void>)[level]!(obj, msg);
    process.stderr.write(JSON.stringify({ level: PINO_LEVELS[level], time: Date.now(), component: 'nats', ...obj, msg }) + '\n');
  };
  return {
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    attach(log) {
      target = log;
    },
  };
}
