import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Backends } from '../types';
import { EmbeddedBlobStore } from './blob-store';
import { EmbeddedEventBus } from './event-bus';
import { EmbeddedJobQueue } from './queue';
import { EmbeddedJobStore } from './job-store';

export { EmbeddedBlobStore, EmbeddedEventBus, EmbeddedJobQueue, EmbeddedJobStore };

/**
 * The embedded default: everything on the local disk under `dataDir`
 *   jobs/<id>.json      job records
 *   queue/<id>.json     queued or in-flight work (removed on ack)
 *   blobs/uploads/<id>  uploaded audio until the job finishes
 *   blobs/results/<id>.json results
 *   events/<id>.json    job-finished events not yet delivered
 *   tmp/                URL downloads of running jobs (emptied on open: one process owns the folder)
 */
export async function openEmbeddedBackends(dataDir: string, log?: (msg: string) => void, opts: { maxDeliveries?: number } = {}): Promise<Backends> {
  // Downloads of jobs that were running when the process was killed; the jobs download again.
  await rm(join(dataDir, 'tmp'), { recursive: true, force: true });
  const [jobs, queue, blobs, events] = await Promise.all([
    EmbeddedJobStore.open(join(dataDir, 'jobs'), log),
    EmbeddedJobQueue.open(join(dataDir, 'queue'), { maxDeliveries: opts.maxDeliveries, log }),
    EmbeddedBlobStore.open(join(dataDir, 'blobs')),
    EmbeddedEventBus.open(join(dataDir, 'events')),
  ]);
  return {
    jobs,
    queue,
    blobs,
    events,
    close: async () => {
      await queue.close();
      await events.close();
    },
  };
}
