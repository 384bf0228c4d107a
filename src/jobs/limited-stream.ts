import { Transform, type Readable } from 'node:stream';
import { BlobTooLargeError } from './types';

/**
 * Pipes `data` through a byte counter that fails with BlobTooLargeError past `maxBytes`,
 * for BlobStore.putStream implementations. The source is piped (not handed to pipeline())
 * so that an overrun leaves it readable: the caller can still drain it and answer 413.
 * A source that errors or closes before its end (also before this call) fails the counter. Call `detach()` when the
 * store is done (success or failure) to unhook the source.
 */
export function limitedStream(data: Readable, maxBytes = Infinity): { counter: Transform; size: () => number; detach: () => void } {
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      if (size > maxBytes) cb(new BlobTooLargeError(maxBytes));
      else cb(null, chunk);
    },
  });
  const onSourceError = (err: Error): void => void counter.destroy(err);
  const onSourceClose = (): void => {
    if (!data.readableEnded) counter.destroy(new Error('the request body ended early'));
  };
  data.once('error', onSourceError);
  data.once('close', onSourceClose);
  data.pipe(counter);
  // Closed before we got here (an upload aborted while the request was being checked): its
  // 'close' has been emitted already and would never come, leaving the store waiting forever.
  if (data.destroyed) onSourceClose();
  return {
    counter,
    size: () => size,
    detach: () => {
      data.unpipe(counter);
      data.off('error', onSourceError);
      data.off('close', onSourceClose);
    },
  };
}
