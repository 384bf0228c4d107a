/**
 * The shared backend behaviour suite (test/jobs/behaviour.ts) on the embedded
 * local-disk implementation; test/nats/behaviour.test.ts runs it on NATS JetStream.
 */
import { openEmbeddedBackends } from '../../src/jobs/embedded';
import { tempDir } from '../http/helpers';
import { backendBehaviour } from './behaviour';

backendBehaviour('embedded', () => {
  const dir = tempDir('auris-embedded-');
  return {
    open: () => openEmbeddedBackends(dir.path),
    cleanup: async () => dir.cleanup(),
  };
});
