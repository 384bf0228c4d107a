/**
 * A describe() block's own `nats-server -js` and the backends its tests open on it: started before
 * the block's tests, every backend closed and the server stopped after them.
 */
import { after, before } from 'node:test';
import { openNatsBackends, type NatsBackendOptions, type NatsBackends } from '../../src/jobs/nats';
import { tempDir } from '../http/helpers';
import { TestNatsServer } from './server';

export interface NatsFixture {
  /** The running server (valid inside the block's tests). */
  readonly server: TestNatsServer;
  /** Opens one node's backends on the server (`defaults`, then `opts`); closed after the block. */
  node(opts?: Partial<NatsBackendOptions>): Promise<NatsBackends>;
}

/** Call inside describe(): registers its before/after hooks. */
export function useNatsServer(defaults: Partial<NatsBackendOptions> & { prefix: string }): NatsFixture {
  let server: TestNatsServer | undefined;
  const tmp = tempDir(`auris-nats-${defaults.prefix}-`);
  const open: NatsBackends[] = [];
  let n = 0;
  before(async () => {
    server = await TestNatsServer.start();
  });
  after(async () => {
    for (const b of open) await b.close().catch(() => undefined);
    await server?.close();
    tmp.cleanup();
  });
  return {
    get server() {
      if (!server) throw new Error('the NATS server starts in before()');
      return server;
    },
    async node(opts = {}) {
      const b = await openNatsBackends({ servers: this.server.url, retentionSec: 3600, tmpDir: tmp.path, reconnectWaitMs: 100, name: `node-${++n}`, ...defaults, ...opts });
      open.push(b);
      return b;
    },
  };
}
