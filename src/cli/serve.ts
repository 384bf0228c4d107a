/**
 * `auris serve`: the REST service on the embedded default (one process, jobs on local disk),
 * or with --nats / NATS_URL one node of a distributed deployment on NATS JetStream, running
 * the parts its --role names (api, worker, all; docs/deploy.md).
 * Configuration: flags and environment variables, see `auris serve --help` and docs/api.md.
 */
import { createHash } from 'node:crypto';
import { type Config, usage } from '../config';
import { startApp } from '../app';
import { ModelRegistry } from '../inference/registry';
import { deferredLogger, natsOptionsFromConfig, openNatsBackends, roleServerOptions } from '../jobs/nats';
import { checkSharedKeys, type KeyFingerprints } from '../jobs/nats/shared-keys';
import { loadKeyRing } from '../download/keys';
import { CallbackSecrets } from '../callbacks/signing';
import { loadCommandConfig } from './util';

export const summary = 'run the service (REST, live streams over gRPC and WebSocket, web console)';

/** What happens to running jobs when this node stops, by its store and role (docs/deploy.md). */
export function shutdownMessage(config: Pick<Config, 'natsUrl' | 'role'>): string {
  if (config.role === 'api') return 'shutting down: finishing requests (this node runs no jobs)';
  if (config.natsUrl) return 'shutting down: finishing requests; running jobs go back to the queue, where another worker takes them';
  return 'shutting down: finishing requests; running jobs resume on the next start';
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage() + '\n');
    return 0;
  }
  const config = loadCommandConfig('serve', argv);
  if (typeof config === 'number') return config;
  // Every model must load before anything listens: a missing or corrupt file fails start-up naming it.
  try {
    await ModelRegistry.load({ modelsDir: config.modelsDir });
  } catch (err) {
    process.stderr.write(`auris serve: cannot start: ${(err as Error).message}\n`);
    return 1;
  }
  // Distributed mode (NATS JetStream, docs/deploy.md) when NATS_URL is set; else the embedded store.
  const natsLog = deferredLogger();
  const backends = config.natsUrl ? await openNatsBackends(natsOptionsFromConfig(config, natsLog)) : undefined;
  // REST + job workers, and (except on worker-only nodes) live streaming over gRPC; src/app.ts.
  const server = await startApp({ config, backends, ...roleServerOptions(config.role), ...(config.role === 'worker' ? { streaming: false as const } : {}) });
  const log = server.rest.app.log;
  natsLog.attach(log.child({ component: 'nats' }));
  log.info(
    { url: server.url, role: config.role, nats: config.natsUrl ?? null, data_dir: config.dataDir, models_dir: config.modelsDir, concurrency: config.concurrency, api_keys: config.apiKeys.length },
    'auris serving',
  );
  // Distributed mode: warn when another node signs downloads or callbacks with other keys.
  const leaveKeyCheck = backends ? await checkSharedKeys(backends.conn, backends.settings, await keyFingerprints(config), log.child({ component: 'nats' })) : async () => {};

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        log.warn('second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      log.info({ signal }, shutdownMessage(config));
      leaveKeyCheck().then(() => server.close()).then(
        () => resolve(0),
        (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}

/** The node's signing keys as public fingerprints (the files exist: startApp loaded or generated them). */
async function keyFingerprints(config: Config): Promise<KeyFingerprints> {
  const keys = await loadKeyRing({ dataDir: config.dataDir, signingKeyFile: config.download.signingKeyFile, verificationKeyFiles: config.download.verificationKeyFiles });
  const secrets = await CallbackSecrets.load({ dataDir: config.dataDir, secretFile: config.callbacks.secretFile, secrets: config.callbacks.secrets });
  const probe = secrets.secretFor({ organization_id: 'auris', project_id: 'key-check' });
  return { signing: keys.signing.kid, callbacks: createHash('sha256').update(probe).digest('hex').slice(0, 16) };
}
