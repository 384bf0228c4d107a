import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AlreadyExistsError, type JobStore, RevisionConflictError, type StoredJob, type Versioned } from '../types';
import { assertSafeName, KeyedSerializer, writeAtomic } from './fsutil';

interface FileForm {
  revision: number;
  job: StoredJob;
}

/**
 * Job records as one JSON file each under <dir>/<jobId>.json, written atomically
 * (temp file + rename), with an in-memory copy for reads. Single process only.
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
      try {
        const parsed = JSON.parse(await readFile(join(dir, name), 'utf8')) as FileForm;
        store.cache.set(parsed.job.record.job_id, { value: parsed.job, revision: parsed.revision });
      } catch (err) {
        log?.(`job store: unreadable record ${name} moved aside: ${(err as Error).message}`);
        await rename(join(dir, name), join(dir, `${name}.corrupt`)).catch(() => undefined);
      }
    }
    return store;
  }

  private path(jobId: string): string {
    assertSafeName(jobId);
    return join(this.dir, `${jobId}.json`);
  }

  async create(job: StoredJob): Promise<number> {
    const id = job.record.job_id;
    const path = this.path(id);
    if (this.cache.has(id)) throw new AlreadyExistsError(`job ${id} exists`);
    const entry = { value: clone(job), revision: 1 };
    this.cache.set(id, entry);
    await this.serial.run(id, () => writeAtomic(path, JSON.stringify({ revision: 1, job } satisfies FileForm)));
    return 1;
  }

  async get(jobId: string): Promise<Versioned<StoredJob> | null> {
    const e = this.cache.get(jobId);
    return e ? { value: clone(e.value), revision: e.revision } : null;
  }

  async update(job: StoredJob, expectedRevision: number): Promise<number> {
    const id = job.record.job_id;
    const path = this.path(id);
    const cur = this.cache.get(id);
    if (!cur || cur.revision !== expectedRevision) {
      throw new RevisionConflictError(`job ${id}: revision ${expectedRevision} is not current (${cur ? cur.revision : 'deleted'})`);
    }
    const revision = expectedRevision + 1;
    this.cache.set(id, { value: clone(job), revision });
    await this.serial.run(id, async () => {
      // A delete that ran meanwhile wins: do not resurrect the file.
      if (this.cache.get(id)?.revision !== revision) return;
      await writeAtomic(path, JSON.stringify({ revision, job } satisfies FileForm));
    });
    return revision;
  }

  async delete(jobId: string): Promise<boolean> {
    const path = this.path(jobId);
    const existed = this.cache.delete(jobId);
    await this.serial.run(jobId, () => rm(path, { force: true }));
    return existed;
  }

  async list(): Promise<StoredJob[]> {
    return [...this.cache.values()].map((e) => clone(e.value));
  }
}

function clone<T>(v: T): T {
  return structuredClone(v);
}
