/**
 * Uploaded audio and JSON results in a JetStream Object Store bucket (chunked, 128 KiB
 * chunks, SHA-256 checked on read). Objects are deleted exactly when the embedded store
 * deletes its files: the upload when the job finishes, the results when the job is
 * deleted or expires (the retention sweeper of any node). A deleted object leaves no
 * marker behind (its metadata subject is purged too).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { type ObjectStore, StorageType } from 'nats';
import { pipeToFile } from '../file-sink';
import { limitedStream } from '../limited-stream';
import type { BlobStore } from '../types';
import type { NatsConn, NatsLogger } from './connection';
import { ensureReplicas } from './settings';

export interface BlobStoreOptions {
  /** Where localFile() copies objects for the decoder. */
  tmpDir: string;
  /** keys() leaves out objects younger than this, ms (they may belong to a job being created elsewhere). */
  orphanGraceMs: number;
}

export class NatsBlobStore implements BlobStore {
  private constructor(
    private readonly conn: NatsConn,
    private readonly os: ObjectStore,
    private readonly bucket: string,
    private readonly opts: BlobStoreOptions,
    private readonly log: NatsLogger,
  ) {}

  static async open(conn: NatsConn, bucket: string, replicas: number, opts: BlobStoreOptions, log: NatsLogger): Promise<NatsBlobStore> {
    const os = await conn.js.views.os(bucket, { storage: StorageType.File, replicas });
    await ensureReplicas(conn.jsm, `OBJ_${bucket}`, replicas, log);
    await removeStaleCopies(opts.tmpDir);
    return new NatsBlobStore(conn, os, bucket, opts, log);
  }

  private check(key: string): string {
    if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/.test(key) || key.length > 300) {
      throw new Error(`unsafe blob key ${JSON.stringify(key)}`);
    }
    return key;
  }

  async putStream(key: string, data: Readable, opts: { maxBytes?: number } = {}): Promise<{ size: number }> {
    this.check(key);
    const { counter, size, detach } = limitedStream(data, opts.maxBytes);
    try {
      await this.conn.call('blob put', () => this.os.put({ name: key }, Readable.toWeb(counter) as unknown as ReadableStream<Uint8Array>));
    } catch (err) {
      counter.destroy();
      throw err;
    } finally {
      detach();
    }
    return { size: size() };
  }

  async put(key: string, data: Buffer | string): Promise<{ size: number }> {
    this.check(key);
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    await this.conn.call('blob put', () => this.os.putBlob({ name: key }, buf));
    return { size: buf.length };
  }

  async getStream(key: string): Promise<{ stream: Readable; size: number } | null> {
    this.check(key);
    const r = await this.conn.call('blob get', () => this.os.get(key));
    if (!r) return null;
    r.error.catch(() => undefined); // surfaced as a stream error
    return { stream: Readable.fromWeb(r.data as unknown as WebReadableStream<Uint8Array>), size: r.info.size };
  }

  async localFile(key: string): Promise<{ path: string; release(): Promise<void> } | null> {
    const got = await this.getStream(key);
    if (!got) return null;
    await mkdir(this.opts.tmpDir, { recursive: true });
    const path = join(this.opts.tmpDir, `blob-${randomBytes(8).toString('hex')}`);
    await pipeToFile(got.stream, path);
    return { path, release: () => rm(path, { force: true }) };
  }

  async delete(key: string): Promise<void> {
    this.check(key);
    await this.conn.call('blob delete', async () => {
      const info = await this.os.info(key);
      if (!info) return;
      await this.os.delete(key);
      // Drop the "deleted" metadata too, so deleted objects leave nothing in the stream.
      await this.conn.jsm.streams.purge(`OBJ_${this.bucket}`, { filter: `$O.${this.bucket}.M.${metaToken(key)}` }).catch((err: unknown) => {
        this.log.warn({ key, err: (err as Error).message }, 'blob store: purging the metadata of a deleted object failed');
      });
    });
  }

  async keys(): Promise<string[]> {
    const all = await this.conn.call('blob list', () => this.os.list());
    const cutoff = Date.now() - this.opts.orphanGraceMs;
    return all.filter((o) => !o.deleted && Date.parse(o.mtime) <= cutoff).map((o) => o.name);
  }
}

/** The subject token of an object name in the bucket's metadata subjects (base64url with padding). */
function metaToken(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** Removes local copies left by a process that died (older than an hour: no job still reads them). */
async function removeStaleCopies(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const cutoff = Date.now() - 3600_000;
  for (const name of names) {
    if (!name.startsWith('blob-')) continue;
    const path = join(dir, name);
    const st = await stat(path).catch(() => null);
    if (st && st.mtimeMs < cutoff) await rm(path, { force: true });
  }
}
