/**
 * Names and settings of the JetStream streams, consumers and buckets of distributed mode,
 * and their creation on start (idempotent: every node runs it; an existing stream or
 * consumer is updated to these settings where JetStream allows it). docs/deploy.md
 * documents each setting.
 */
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  type ConsumerConfig,
  type JetStreamManager,
  nanos,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from 'nats';
import { apiErrorCode, type NatsLogger } from './connection';

export interface NatsSettings {
  /** Name prefix of every stream, consumer, bucket and subject (several deployments can share a cluster). */
  prefix: string;
  /** Replicas of every stream and bucket (1 on a single server; 3 or 5 on a cluster). */
  replicas: number;
  /** A job whose worker sends no heartbeat for this long is delivered again, ms (first delivery; later ones back off). */
  ackWaitMs: number;
  /** Deliveries of one job before it is given up (marked failed with JOB_INTERRUPTED). */
  maxDeliver: number;
  /** Ack wait of the callback dispatcher's consumer, ms (kept alive by heartbeats while a callback is delivered). */
  eventsAckWaitMs: number;
}

export const DEFAULT_SETTINGS: NatsSettings = {
  prefix: 'auris',
  replicas: 1,
  ackWaitMs: 30_000,
  maxDeliver: 5,
  eventsAckWaitMs: 30_000,
};

export interface Names {
  jobsStream: string;
  jobsSubjectPrefix: string;
  workersConsumer: string;
  eventsStream: string;
  eventsSubject: string;
  dispatchersConsumer: string;
  deadStream: string;
  deadConsumer: string;
  /** The advisory JetStream sends when a job message ran out of deliveries. */
  maxDeliveriesAdvisory: string;
  jobsBucket: string;
  blobsBucket: string;
}

export function names(prefix: string): Names {
  if (!/^[A-Za-z0-9_-]+$/.test(prefix)) throw new Error(`NATS prefix must be letters, digits, '-' or '_' (got ${JSON.stringify(prefix)})`);
  const up = prefix.toUpperCase().replace(/-/g, '_');
  const low = prefix.toLowerCase().replace(/-/g, '_');
  const jobsStream = `${up}_JOBS`;
  const workersConsumer = 'workers';
  return {
    jobsStream,
    jobsSubjectPrefix: `${low}.jobs.`,
    workersConsumer,
    eventsStream: `${up}_EVENTS`,
    eventsSubject: `${low}.events.job-finished`,
    dispatchersConsumer: 'callbacks',
    deadStream: `${up}_JOBS_EXHAUSTED`,
    deadConsumer: 'exhausted',
    maxDeliveriesAdvisory: `$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.${jobsStream}.${workersConsumer}`,
    jobsBucket: `${low}_jobs`,
    blobsBucket: `${low}_blobs`,
  };
}

/** Redelivery delays after a missed ack wait: ackWait, 2x, 4x ... (one fewer than maxDeliver, capped at 10 min). */
export function backoffMs(s: NatsSettings): number[] {
  const n = Math.max(1, s.maxDeliver - 1);
  return Array.from({ length: n }, (_, i) => Math.min(s.ackWaitMs * 2 ** i, Math.max(s.ackWaitMs, 600_000)));
}

export function streamConfigs(n: Names, s: NatsSettings): Array<Partial<StreamConfig> & { name: string }> {
  return [
    {
      // One message per queued job (subject <prefix>.jobs.<jobId>), removed when a worker acks it.
      name: n.jobsStream,
      description: 'auris: queued and in-flight jobs (work queue)',
      subjects: [`${n.jobsSubjectPrefix}>`],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: s.replicas,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(120_000),
    },
    {
      // Job-finished events, removed when a callback dispatcher has handled them.
      name: n.eventsStream,
      description: 'auris: job-finished events for the callback dispatchers (work queue)',
      subjects: [n.eventsSubject],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: s.replicas,
      discard: DiscardPolicy.Old,
      duplicate_window: nanos(120_000),
    },
    {
      // JetStream's max-deliveries advisories of the job consumer, kept until handled.
      name: n.deadStream,
      description: 'auris: jobs that ran out of deliveries, to be marked failed',
      subjects: [n.maxDeliveriesAdvisory],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      num_replicas: s.replicas,
      discard: DiscardPolicy.Old,
    },
  ];
}

export function consumerConfigs(n: Names, s: NatsSettings): Array<{ stream: string; config: Partial<ConsumerConfig> & { durable_name: string } }> {
  const base = { ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, replay_policy: ReplayPolicy.Instant, num_replicas: 0 };
  return [
    {
      stream: n.jobsStream,
      config: {
        ...base,
        durable_name: n.workersConsumer,
        description: 'auris workers (pull)',
        filter_subject: `${n.jobsSubjectPrefix}>`,
        // With a backoff list JetStream takes the first value as the ack wait.
        ack_wait: nanos(s.ackWaitMs),
        backoff: backoffMs(s).map((ms) => nanos(ms)),
        max_deliver: s.maxDeliver,
        max_ack_pending: 10_000,
        max_waiting: 4096,
      },
    },
    {
      stream: n.eventsStream,
      config: {
        ...base,
        durable_name: n.dispatchersConsumer,
        description: 'auris callback dispatchers (pull)',
        ack_wait: nanos(s.eventsAckWaitMs),
        max_deliver: -1,
        max_ack_pending: 10_000,
        max_waiting: 4096,
      },
    },
    {
      stream: n.deadStream,
      config: {
        ...base,
        durable_name: n.deadConsumer,
        description: 'auris: marks jobs that ran out of deliveries as failed',
        ack_wait: nanos(30_000),
        max_deliver: -1,
        max_ack_pending: 1000,
      },
    },
  ];
}

/** Creates the stream, or updates an existing one to `cfg` (JetStream refuses changes it cannot make; those are logged). */
export async function ensureStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }, log: NatsLogger): Promise<void> {
  try {
    await jsm.streams.info(cfg.name);
  } catch (err) {
    if (apiErrorCode(err) !== 10059 /* stream not found */) throw err;
    try {
      await jsm.streams.add(cfg);
      log.info({ stream: cfg.name }, 'created NATS stream');
      return;
    } catch (e) {
      if (apiErrorCode(e) !== 10058 /* name in use: another node created it */) throw e;
    }
  }
  await updateStream(jsm, cfg, log);
}

async function updateStream(jsm: JetStreamManager, cfg: Partial<StreamConfig> & { name: string }, log: NatsLogger): Promise<void> {
  const cur = (await jsm.streams.info(cfg.name)).config;
  const changed = (Object.keys(cfg) as Array<keyof StreamConfig>).filter((k) => k !== 'name' && JSON.stringify(cur[k]) !== JSON.stringify(cfg[k]));
  if (changed.length === 0) return;
  try {
    await jsm.streams.update(cfg.name, { ...cur, ...cfg });
    log.info({ stream: cfg.name, changed }, 'updated NATS stream settings');
  } catch (err) {
    log.warn({ stream: cfg.name, changed, err: (err as Error).message }, 'could not update NATS stream settings; keeping the existing ones');
  }
}

/** Only the replica count of a bucket's stream is reconciled (the rest is fixed at creation). */
export async function ensureReplicas(jsm: JetStreamManager, stream: string, replicas: number, log: NatsLogger): Promise<void> {
  const info = await jsm.streams.info(stream);
  if (info.config.num_replicas === replicas) return;
  try {
    await jsm.streams.update(stream, { ...info.config, num_replicas: replicas });
    log.info({ stream, replicas }, 'changed NATS stream replicas');
  } catch (err) {
    log.warn({ stream, replicas, err: (err as Error).message }, 'could not change NATS stream replicas');
  }
}

export async function ensureConsumer(jsm: JetStreamManager, stream: string, cfg: Partial<ConsumerConfig> & { durable_name: string }, log: NatsLogger): Promise<void> {
  let cur: ConsumerConfig | null = null;
  try {
    cur = (await jsm.consumers.info(stream, cfg.durable_name)).config;
  } catch (err) {
    if (apiErrorCode(err) !== 10014 /* consumer not found */) throw err;
  }
  if (!cur) {
    try {
      await jsm.consumers.add(stream, cfg);
      log.info({ stream, consumer: cfg.durable_name }, 'created NATS consumer');
      return;
    } catch (err) {
      // Created by another node at the same moment: compare and update below.
      cur = (await jsm.consumers.info(stream, cfg.durable_name)).config;
      if (!cur) throw err;
    }
  }
  const keys = ['ack_wait', 'backoff', 'max_deliver', 'max_ack_pending', 'max_waiting', 'description'] as const;
  const changed = keys.filter((k) => cfg[k] !== undefined && JSON.stringify(cur![k]) !== JSON.stringify(cfg[k]));
  if (changed.length === 0) return;
  try {
    const update: Record<string, unknown> = {};
    for (const k of keys) if (cfg[k] !== undefined) update[k] = cfg[k];
    await jsm.consumers.update(stream, cfg.durable_name, update);
    log.info({ stream, consumer: cfg.durable_name, changed }, 'updated NATS consumer settings');
  } catch (err) {
    log.warn({ stream, consumer: cfg.durable_name, changed, err: (err as Error).message }, 'could not update NATS consumer settings');
  }
}
