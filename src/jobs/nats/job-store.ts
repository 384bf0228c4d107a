/**
 * Job records in a JetStream KV bucket: one key per job id, history 1, reads from the
 * stream leader (no direct gets from replicas, so a read after a write sees the write).
 * Updates are revision-checked by the server (expected last sequence of the key), so two
 * workers cannot both finish a job. list() is served from an in-process copy kept by a
 * KV watch (rebuilt after every reconnect); get() always asks the server.
 */
import { type KV, type KvEntry, StorageType, type QueuedIterator } from 'nats';
import { AlreadyExistsError, type JobStore, RevisionConflictError, type StoredJob, type Versioned } from '../types';
import { storedJobProblem } from '../record';
import { apiErrorCode, type NatsConn, type NatsLogger } from './connection';
import { ensureReplicas } from './settings';

const WRONG_LAST_SEQUENCE = 10071;
const PURGE_MARKERS_EVERY_MS = 3600_000;
const PURGE_MARKERS_OLDER_THAN_MS = 1800_000;

export class NatsJobStore implements JobStore {
  private cache = new Map<string, StoredJob>();
  private watcher: QueuedIterator<KvEntry> | null = null;
  private readonly purgeTimer: NodeJS.Timeout;
  private closed = false;

  private constructor(
    private readonly conn: NatsConn,
    private readonly kv: KV,
    private readonly log: NatsLogger,
  ) {
    this.purgeTimer = setInterval(() => void this.purgeMarkers(), PURGE_MARKERS_EVERY_MS + Math.floor(Math.random() * 60_000));
    this.purgeTimer.unref();
  }

  static async open(conn: NatsConn, bucket: string, replicas: number, log: NatsLogger): Promise<NatsJobStore> {
    const kv = await conn.js.views.kv(bucket, { history: 1, replicas, storage: StorageType.File, allow_direct: false });
    await ensureReplicas(conn.jsm, `KV_${bucket}`, replicas, log);
    const store = new NatsJobStore(conn, kv, log);
    await store.watch();
    conn.onReconnect.push(() => {
      // The watcher's consumer may not have survived a server restart: start over from the last values.
      store.watch().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'job store: restarting the KV watch failed'));
    });
    return store;
  }

  /** (Re)starts the watch; resolves once the copy holds every current record. */
  private async watch(): Promise<void> {
    if (this.closed) return;
    const fresh = new Map<string, StoredJob>();
    let ready!: () => void;
    const initialized = new Promise<void>((r) => (ready = r));
    const iter = await this.kv.watch({
      initializedFn: () => {
        this.cache = fresh;
        ready();
      },
    });
    if (this.closed) {
      // close() ran while the watch was being created (e.g. one restarted on reconnect): it never saw this
      // iterator, whose idle-heartbeat timer would otherwise keep the process alive.
      iter.stop();
      return;
    }
    const old = this.watcher;
    this.watcher = iter;
    old?.stop();
    void (async () => {
      for await (const e of iter) {
        if (e.operation === 'PUT') {
          const job = this.parse(e);
          if (job) fresh.set(e.key, job);
          else fresh.delete(e.key);
        } else fresh.delete(e.key);
      }
      ready(); // stopped before it was initialised: nobody waits forever
    })().catch((err: unknown) => {
      if (!this.closed) this.log.warn({ err: (err as Error).message }, 'job store: KV watch ended');
    });
    await initialized;
  }

  /** The record of a KV entry; a malformed one (src/jobs/record.ts storedJobProblem) is logged and treated as absent. */
  private parse(e: KvEntry): StoredJob | null {
    let v: unknown;
    try {
      v = e.json<unknown>();
    } catch {
      v = undefined;
    }
    const problem = v === undefined ? 'not JSON' : storedJobProblem(v);
    if (problem) {
      this.log.warn({ key: e.key, problem }, 'job store: malformed record ignored');
      return null;
    }
    return v as StoredJob;
  }

  async create(job: StoredJob): Promise<number> {
    const id = job.record.job_id;
    return this.conn.call('job create', async () => {
      try {
        const rev = await this.kv.create(id, JSON.stringify(job));
        this.cache.set(id, structuredClone(job));
        return rev;
      } catch (err) {
        if (apiErrorCode(err) === WRONG_LAST_SEQUENCE) throw new AlreadyExistsError(`job ${id} exists`);
        throw err;
      }
    });
  }

  async get(jobId: string): Promise<Versioned<StoredJob> | null> {
    return this.conn.call('job get', async () => {
      const e = await this.kv.get(jobId);
      if (!e || e.operation !== 'PUT') return null;
      const value = this.parse(e);
      return value ? { value, revision: e.revision } : null;
    });
  }

  async update(job: StoredJob, expectedRevision: number): Promise<number> {
    const id = job.record.job_id;
    return this.conn.call('job update', async () => {
      try {
        const rev = await this.kv.update(id, JSON.stringify(job), expectedRevision);
        if (this.cache.has(id)) this.cache.set(id, structuredClone(job));
        return rev;
      } catch (err) {
        if (apiErrorCode(err) === WRONG_LAST_SEQUENCE) {
          throw new RevisionConflictError(`job ${id}: revision ${expectedRevision} is not current`);
        }
        throw err;
      }
    });
  }

  async delete(jobId: string): Promise<boolean> {
    return this.conn.call('job delete', async () => {
      const e = await this.kv.get(jobId);
      if (!e || e.operation !== 'PUT') return false;
      await this.kv.purge(jobId);
      this.cache.delete(jobId);
      return true;
    });
  }

  /** Every job, from the watched copy (at most a moment behind the bucket; also while NATS is unreachable). */
  async list(): Promise<StoredJob[]> {
    return [...this.cache.values()].map((j) => structuredClone(j));
  }

  /** Removes the purge markers of deleted jobs (one small message per deleted key). */
  private async purgeMarkers(): Promise<void> {
    if (!this.conn.isConnected) return;
    try {
      // On the implementation (KvImpl), not on the KV interface.
      await (this.kv as KV & { purgeDeletes?(olderMillis?: number): Promise<unknown> }).purgeDeletes?.(PURGE_MARKERS_OLDER_THAN_MS);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'job store: purging delete markers failed');
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.purgeTimer);
    this.watcher?.stop();
    this.watcher = null;
  }
}
