import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { once } from 'node:events';
import type { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * Pipes `source` (through `through`, if given) into a new file at `path`; on any failure the
 * file is removed and the error rethrown. The removal waits until the file is closed:
 * pipeline() rejects as soon as one stream fails, while the file may still be opening, and
 * a plain rm() would then run before the open creates it (an aborted upload left 0-byte
 * `.tmp-*` files that way).
 */
export async function pipeToFile(source: Readable, path: string, through?: Transform): Promise<void> {
  const file = createWriteStream(path);
  try {
    await (through ? pipeline(source, through, file) : pipeline(source, file));
  } catch (err) {
    if (!file.closed) await once(file, 'close').catch(() => undefined);
    await rm(path, { force: true });
    throw err;
  }
}
