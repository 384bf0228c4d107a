/**
 * The shared backend behaviour suite (test/jobs/behaviour.ts) on NATS JetStream, against
 * a real nats-server started for this file.
 */
import { after, before } from 'node:test';
import { openNatsBackends } from '../../src/jobs/nats';
import { tempDir } from '../http/helpers';
import { backendBehaviour } from '../jobs/behaviour';
import { envSkip } from '../env';
import { natsUnavailable, TestNatsServer } from './server';

const skip = envSkip(natsUnavailable());
let server: TestNatsServer | null = null;
let n = 0;

before(async () => {
  if (!skip) server = await TestNatsServer.start();
});
after(async () => {
  await server?.close();
});

backendBehaviour(
  'NATS JetStream',
  () => {
    // Each harness gets its own streams and buckets on the shared server.
    const prefix = `t${++n}`;
    const tmp = tempDir('auris-nats-blobs-');
    return {
      open: () =>
        openNatsBackends({
          servers: server!.url,
          prefix,
          retentionSec: 3600,
          ackWaitMs: 1000,
          eventsAckWaitMs: 1000,
          orphanGraceMs: 0,
          tmpDir: tmp.path,
          reconnectWaitMs: 100,
        }),
      cleanup: async () => tmp.cleanup(),
    };
  },
  { skip },
);
