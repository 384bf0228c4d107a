import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** Writes `data` to `path` atomically (temporary file in the same folder, then rename). */
export async function writeAtomic(path: string, data: string | Buffer): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = join(dirname(path), `.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** Runs tasks for the same key one after another (in-process per-key lock). */
export class KeyedSerializer {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(task, task);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}

/** Ids and keys used as file names: letters, digits, '-', '_', '.' (no leading dot). */
export function assertSafeName(name: string): void {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/.test(name)) throw new Error(`unsafe name ${JSON.stringify(name)}`);
}

/** Largest file read back from the data directory as JSON (a queue entry, a job record, an event). */
export const MAX_STORED_JSON_BYTES = 1024 * 1024;

/**
 * Reads a small JSON file of the data directory. Never follows a symbolic link (O_NOFOLLOW: a
 * link planted in DATA_DIR could point at /etc/passwd), reads only regular files of at most
 * `maxBytes` (a 50 MB garbage entry delayed start-up), and its errors never quote the file's
 * content (JSON.parse's message does: it went to the log).
 */
export async function readStoredJson(path: string, maxBytes = MAX_STORED_JSON_BYTES): Promise<unknown> {
  let handle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new Error(code === 'ELOOP' ? 'a symbolic link (not followed)' : `cannot be opened (${code ?? 'error'})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > maxBytes) throw new Error(`${st.size} bytes, over the ${maxBytes}-byte limit (not read)`);
    const text = (await handle.readFile()).toString('utf8');
    try {
      return JSON.parse(text);
    } catch {
      throw new Error('not valid JSON');
    }
  } finally {
    await handle.close();
  }
}
