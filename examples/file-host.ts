/**
 * Example file host: serves the files of one folder, but only to download requests that
 * carry a valid `X-Service-Request-Verification` JWT of an auris service (see
 * docs/download.md). Everything else gets 403.
 *
 *   npm run build:ts
 *   node dist/examples/file-host.js --dir ./audio --port 9000 \
 *        --auris http://127.0.0.1:8080 --organization my-org --project my-project \
 *        [--public-url https://files.example]   # the URL prefix clients give to auris
 *
 * The keys come from the service's GET /.well-known/jwks.json (fetched at start, refreshed
 * every 5 minutes and when a token names an unknown kid, at most once a minute), or from
 * `--public-key <base64 DER> --kid <kid>` (the spec's form, e.g. from `auris keys`).
 * Replays are refused with an in-memory jti store (one process; use a shared store when
 * several processes serve the same files).
 *
 * In your own project import the verifier from the package: `import { verifyDownloadRequest } from 'auris'`.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve, sep } from 'node:path';
import { parseArgs } from 'node:util';
import type { JWK } from 'jose';
import { DownloadVerificationError, MemoryJtiStore, verifyDownloadRequest, type VerifyDownloadOptions } from '../src';

export interface FileHostOptions {
  /** Folder served (files directly under it or in subfolders; no listing). */
  dir: string;
  organizationId: string;
  projectId: string;
  /** URL prefix the clients use in their auris jobs, e.g. https://files.example (default: http://host:port of this server). */
  publicUrl?: string;
  /** Where the service publishes its keys (…/.well-known/jwks.json). */
  jwksUrl?: string;
  /** Or a fixed key: base64 DER (SPKI) and its key id. */
  publicKey?: { kid: string; key: string };
  host?: string;
  port?: number;
  /** Called for every request: the outcome (for logs and tests). */
  onRequest?(entry: { path: string; status: number; reason?: string; jobId?: string }): void;
}

export interface FileHost {
  server: Server;
  url: string;
  close(): Promise<void>;
}

const REFRESH_MS = 5 * 60_000;
const MIN_REFETCH_MS = 60_000;

/** Keeps the service's JWKS: refreshed periodically, and early (rate-limited) for an unknown kid. */
class JwksCache {
  private jwks: { keys: JWK[] } = { keys: [] };
  private fetchedAt = 0;
  private pending: Promise<void> | null = null;

  constructor(private readonly url: string) {}

  async get(kid?: string): Promise<{ keys: JWK[] }> {
    const age = Date.now() - this.fetchedAt;
    const unknownKid = kid !== undefined && !this.jwks.keys.some((k) => k.kid === kid);
    if (age > REFRESH_MS || (unknownKid && age > MIN_REFETCH_MS)) await this.refresh();
    return this.jwks;
  }

  refresh(): Promise<void> {
    this.pending ??= (async () => {
      try {
        const res = await fetch(this.url, { signal: AbortSignal.timeout(10_000) });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const body = (await res.json()) as { keys?: JWK[] };
        if (!Array.isArray(body.keys)) throw new Error('not a JWK Set');
        this.jwks = { keys: body.keys };
        this.fetchedAt = Date.now();
      } finally {
        this.pending = null;
      }
    })();
    return this.pending;
  }
}

function kidOf(req: IncomingMessage): string | undefined {
  const token = req.headers['x-service-request-verification'];
  if (typeof token !== 'string') return undefined;
  try {
    return (JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: string }).kid;
  } catch {
    return undefined;
  }
}

export async function startFileHost(opts: FileHostOptions): Promise<FileHost> {
  const root = resolve(opts.dir);
  const seenJti = new MemoryJtiStore();
  const jwks = opts.jwksUrl ? new JwksCache(opts.jwksUrl) : null;
  if (!jwks && !opts.publicKey) throw new Error('give jwksUrl or publicKey');
  if (jwks) await jwks.refresh();
  let base = opts.publicUrl?.replace(/\/$/, '') ?? '';

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!;
    const done = (status: number, reason?: string, jobId?: string): void => {
      opts.onRequest?.({ path, status, reason, jobId });
    };
    if (req.method !== 'GET') {
      res.writeHead(405, { allow: 'GET' }).end();
      return done(405);
    }
    // 1. The request must be a verified download of exactly this URL.
    const keyOpts: Pick<VerifyDownloadOptions, 'jwks' | 'publicKey'> = jwks ? { jwks: await jwks.get(kidOf(req)) } : { publicKey: opts.publicKey! };
    let jobId: string;
    try {
      const { claims } = await verifyDownloadRequest(req.headers, {
        ...keyOpts,
        organizationId: opts.organizationId,
        projectId: opts.projectId,
        expectedUrl: base + (req.url ?? '/'),
        seenJti,
      });
      jobId = claims.job_id;
    } catch (err) {
      const reason = err instanceof DownloadVerificationError ? err.code : 'ERROR';
      res.writeHead(403, { 'content-type': 'text/plain' }).end('forbidden\n');
      return done(403, reason);
    }
    // 2. Only files inside the folder.
    let file: string;
    try {
      file = resolve(root, '.' + decodeURIComponent(path));
    } catch {
      res.writeHead(400).end();
      return done(400, 'BAD_PATH', jobId);
    }
    const st = file.startsWith(root + sep) ? await stat(file).catch(() => null) : null;
    if (!st || !st.isFile()) {
      res.writeHead(404).end();
      return done(404, 'NOT_FOUND', jobId);
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': st.size });
    createReadStream(file)
      .on('error', () => res.destroy())
      .pipe(res);
    done(200, undefined, jobId);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', r));
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`;
  if (!base) base = url;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string' },
      port: { type: 'string', default: '9000' },
      host: { type: 'string', default: '127.0.0.1' },
      auris: { type: 'string' },
      'jwks-url': { type: 'string' },
      'public-key': { type: 'string' },
      kid: { type: 'string' },
      organization: { type: 'string' },
      project: { type: 'string' },
      'public-url': { type: 'string' },
    },
  });
  const keySource = values.auris || values['jwks-url'] || (values['public-key'] && values.kid);
  if (!values.dir || !values.organization || !values.project || !keySource) {
    process.stderr.write(
      'usage: node dist/examples/file-host.js --dir DIR --organization ORG --project PROJECT\n' +
        '       (--auris http://auris:8080 | --jwks-url URL | --public-key BASE64_DER --kid KID)\n' +
        '       [--port 9000] [--host 127.0.0.1] [--public-url https://files.example]\n',
    );
    process.exit(2);
  }
  const host = await startFileHost({
    dir: values.dir,
    organizationId: values.organization,
    projectId: values.project,
    publicUrl: values['public-url'],
    jwksUrl: values['jwks-url'] ?? (values.auris ? `${values.auris.replace(/\/$/, '')}/.well-known/jwks.json` : undefined),
    publicKey: values['public-key'] ? { kid: values.kid ?? '', key: values['public-key'] } : undefined,
    host: values.host,
    port: Number(values.port),
    onRequest: (e) => process.stdout.write(JSON.stringify({ time: new Date().toISOString(), ...e }) + '\n'),
  });
  process.stdout.write(`file host serving ${resolve(values.dir)} at ${host.url} (verified requests only)\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`file host: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
