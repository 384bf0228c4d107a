/**
 * Example callback receiver: accepts auris job-finished callbacks only when their Standard
 * Webhooks signature verifies with the project's secret, within the 5-minute replay window,
 * and only once per webhook-id (retries of a delivered event are acknowledged, not acted on
 * twice). Everything else gets 400.
 *
 *   npm run build:ts
 *   AURIS_CALLBACK_SECRET=whsec_... node dist/examples/callback-receiver.js --port 9100
 *   # the secret: curl -H "x-api-key: $KEY" http://127.0.0.1:8080/file-processing/callback-secret
 *
 * Verify the raw body exactly as received (not a re-serialized JSON object).
 * In your own project import the verifier from the package: `import { verifyCallback } from 'auris'`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { CallbackVerificationError, MemoryWebhookIdStore, verifyCallback } from '../src';

export interface FinishedJob {
  job_id: string;
  status: 'succeeded' | 'failed';
  results_url: string | null;
  error: { code: string; message: string } | null;
  metadata: Record<string, string> | null;
}

export interface CallbackReceiverOptions {
  secret: string;
  host?: string;
  port?: number;
  /** Called once per verified event. */
  onJob?: (job: FinishedJob) => void;
  /** Where refusals are reported (default: stderr). */
  onRefused?: (reason: string) => void;
}

export async function startCallbackReceiver(opts: CallbackReceiverOptions): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const seen = new MemoryWebhookIdStore(); // one process; use a shared store when several receive
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      verifyCallback<FinishedJob>(Buffer.concat(chunks), req.headers, { secret: opts.secret, seenIds: seen }).then(
        (job) => {
          opts.onJob?.(job);
          res.writeHead(204).end();
        },
        (err: unknown) => {
          const duplicate = err instanceof CallbackVerificationError && err.code === 'REPLAYED';
          (opts.onRefused ?? ((r) => process.stderr.write(r + '\n')))(`${(err as Error).message}`);
          // A retry of an event already handled is acknowledged so the service stops retrying.
          res.writeHead(duplicate ? 200 : 400, { 'content-type': 'text/plain' }).end(duplicate ? 'already received' : 'invalid callback');
        },
      );
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', r));
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.address}:${addr.port}/`,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

if (require.main === module) {
  const { values } = parseArgs({ options: { port: { type: 'string', default: '9100' }, host: { type: 'string', default: '127.0.0.1' } } });
  const secret = process.env.AURIS_CALLBACK_SECRET;
  if (!secret) {
    process.stderr.write('set AURIS_CALLBACK_SECRET to the project secret (GET /file-processing/callback-secret)\n');
    process.exit(2);
  }
  void startCallbackReceiver({
    secret,
    host: values.host,
    port: Number(values.port),
    onJob: (job) => process.stdout.write(`${job.job_id} ${job.status}${job.error ? ` ${job.error.code}` : ''}\n`),
  }).then((r) => process.stdout.write(`listening on ${r.url}\n`));
}
