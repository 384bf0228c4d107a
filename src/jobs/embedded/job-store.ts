import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AlreadyExistsError, type JobStore, RevisionConflictError, type StoredJob, type Versioned } from '../types';
import { storedJobProblem } from '../record';
import { assertSafeName, KeyedSerializer, readStoredJson, writeAtomic } from './fsutil';

interface FileForm {
  revision: number;
  job: StoredJob;
}

/**
 * Job records as one JSON file each under <dir>/<jobId>.json, written atomically
 * (temp file + rename), with an in-memory copy for reads. Single process only. A record
 * that is not valid (src/jobs/record.ts storedJobProblem) is set aside on open as
 * <id>.json.corrupt.
 */
export class EmbeddedJobStore implements JobStore {
  private readonly cache = new Map<string, Versioned<StoredJob>>();
  private readonly serial = new KeyedSerializer();

  private constructor(private readonly dir: string) {}

  static async open(dir: string, log?: (msg: string) => void): Promise<EmbeddedJobStore> {
    await mkdir(dir, { recursive: true });
    const store = new EmbeddedJobStore(dir);
    for (const name of await readdir(dir)) {
      if (name.startsWith('.tmp-')) {
        await rm(join(dir, name), { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const read = await readRecord(join(dir, name), name.slice(0, -'.json'.length));
      if (typeof read === 'string') {
        log?.(`job store: malformed record ${name} moved aside: ${read}`);
        await rename(join(dir, name), join(dir, `${name}.corrupt`)).catch(() => undefined);
        continue;
      }
      store.cache.set(read.job.record.job_id, { value: read.job, revision: read.revision });
    }
    return store;
  }

  private path(jobId: string): string {
    assertSafeName(jobId);
    return join(this.dir, `${jobId}.json`);
  }

  // Writes go to disk first and change the in-memory copy only once they succeeded, so
  // reads never show a state that is not on disk. Per job, one write at a time.

  async create(job: StoredJob): Promise<number> {
    const id = job.record.job_id;
    const path = this.path(id);
    return this.serial.run(id, async () => {
      if (this.cache.has(id)) throw new AlreadyExistsError(`job ${id} exists`);
      await writeAtomic(path, JSON.stringify({ revision: 1, job } satisfies FileForm));
      this.cache.set(id, { value: clone(job), revision: 1 });
      return 1;
    });
  }

  async get(jobId: string): Promise<Versioned<StoredJob> | null> {
    const e = this.cache.get(jobId);
    return e ? { value: clone(e.value), revision: e.revision } : null;
  }

  async update(job: StoredJob, expectedRevision: number): Promise<number> {
    const id = job.record.job_id;
    const path = this.path(id);
    const value = clone(job);
    return this.serial.run(id, async () => {
      const cur = this.cache.get(id);
      if (!cur || cur.revision !== expectedRevision) {
        throw new RevisionConflictError(`job ${id}: revision ${expectedRevision} is not current (${cur ? cur.revision : 'deleted'})`);
      }
      const revision = expectedRevision + 1;
      await writeAtomic(path, JSON.stringify({ revision, job: value } satisfies FileForm));
      this.cache.set(id, { value, revision });
      return revision;
    });
  }

  async delete(jobId: string): Promise<boolean> {
    const path = this.path(jobId);
    return this.serial.run(jobId, async () => {
      if (!this.cache.has(jobId)) return false;
      await rm(path, { force: true });
      this.cache.delete(jobId);
      return true;
    });
  }

  async list(): Promise<StoredJob[]> {
    return [...this.cache.values()].map((e) => clone(e.value));
  }
}

/** The record in `path`, or what is wrong with it (then it is set aside). */
async function readRecord(path: string, expectedId: string): Promise<FileForm | string> {
  let parsed: Partial<FileForm> | null;
  try {
    parsed = (await readStoredJson(path)) as Partial<FileForm> | null;
  } catch (err) {
    return `unreadable: ${(err as Error).message}`;
  }
  if (!parsed || typeof parsed !== 'object') return 'not an object';
  if (typeof parsed.revision !== 'number' || !Number.isInteger(parsed.revision) || parsed.revision < 1) return 'revision is not a positive integer';
  const problem = storedJobProblem(parsed.job);
  if (problem) return problem;
  if (parsed.job!.record.job_id !== expectedId) return 'record.job_id does not match the file name';
  return parsed as FileForm;
}

function clone<T>(v: T): T {
  return structuredClone(v);
}
