import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import type { Readable } from 'node:stream';
import { limitedStream } from '../limited-stream';
import { pipeToFile } from '../file-sink';
import type { BlobStore } from '../types';
import { writeAtomic } from './fsutil';

/** Blobs as plain files under <dir>/<key>; keys are '/'-separated safe names. */
export class EmbeddedBlobStore implements BlobStore {
  private constructor(private readonly dir: string) {}

  static async open(dir: string): Promise<EmbeddedBlobStore> {
    await mkdir(dir, { recursive: true });
    return new EmbeddedBlobStore(dir);
  }

  private path(key: string): string {
    if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(key) || key.length > 300) {
      throw new Error(`unsafe blob key ${JSON.stringify(key)}`);
    }
    return join(this.dir, ...key.split('/'));
  }

  async putStream(key: string, data: Readable, opts: { maxBytes?: number } = {}): Promise<{ size: number }> {
    const path = this.path(key);
    await mkdir(dirname(path), { recursive: true });
    const tmp = join(dirname(path), `.tmp-${randomBytes(6).toString('hex')}`);
    const { counter, size, detach } = limitedStream(data, opts.maxBytes);
    try {
      await pipeToFile(counter, tmp);
      await rename(tmp, path).catch(async (err: unknown) => {
        await rm(tmp, { force: true });
        throw err;
      });
    } finally {
      detach();
    }
    return { size: size() };
  }

  async put(key: string, data: Buffer | string): Promise<{ size: number }> {
    await writeAtomic(this.path(key), data);
    return { size: typeof data === 'string' ? Buffer.byteLength(data) : data.length };
  }

  async getStream(key: string): Promise<{ stream: Readable; size: number } | null> {
    const path = this.path(key);
    try {
      const st = await stat(path);
      return { stream: createReadStream(path), size: st.size };
    } catch {
      return null;
    }
  }

  async localFile(key: string): Promise<{ path: string; release(): Promise<void> } | null> {
    const path = this.path(key);
    try {
      await stat(path);
    } catch {
      return null;
    }
    return { path, release: async () => undefined };
  }

  async delete(key: string): Promise<void> {
    await rm(this.path(key), { force: true });
  }

  async keys(): Promise<string[]> {
    const out: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const ent of await readdir(d, { withFileTypes: true })) {
        const p = join(d, ent.name);
        if (ent.isDirectory()) await walk(p);
        else if (ent.name.startsWith('.tmp-')) await rm(p, { force: true });
        else out.push(relative(this.dir, p).split(sep).join('/'));
      }
    };
    await walk(this.dir);
    return out;
  }
}
