/**
 * Serves the web console (web/, built into web/dist by `node web/build.mjs`, run by
 * scripts/setup.sh) from the same server: GET / is the page, GET /console/<build>/<file>
 * its scripts and styles. Everything is local (no CDN); a Content-Security-Policy of
 * 'self' enforces it. The console uses only the public REST API.
 *
 * Caching: the page is `no-cache` (revalidated with its ETag); assets live under a path
 * holding a hash of the whole build, so they are `immutable` for a year and a new build
 * gets new URLs. Files are read once and kept in memory (the build is a few tens of KB).
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors';

export interface ConsoleOptions {
  /** Directory of the built console; default <package>/web/dist. */
  dir?: string;
}

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

interface Build {
  id: string;
  page: Asset;
  assets: Map<string, Asset>;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const defaultConsoleDir = (): string => resolve(__dirname, '..', '..', '..', 'web', 'dist');

const etagOf = (body: Buffer): string => `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;

/** Reads the build; null when it is not there (not built yet). */
export function loadConsoleBuild(dir: string): Build | null {
  const pagePath = join(dir, 'index.html');
  if (!existsSync(pagePath)) return null;
  const assets = new Map<string, Asset>();
  const hash = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    const type = TYPES[extname(name)];
    if (name === 'index.html' || !type || !/^[A-Za-z0-9._-]+$/.test(name) || !statSync(join(dir, name)).isFile()) continue;
    const body = readFileSync(join(dir, name));
    hash.update(name).update('\0').update(body);
    assets.set(name, { body, type, etag: etagOf(body) });
  }
  const id = hash.digest('hex').slice(0, 12);
  const html = readFileSync(pagePath, 'utf8').replaceAll('%BASE%', `/console/${id}/`);
  const body = Buffer.from(html, 'utf8');
  return { id, page: { body, type: TYPES['.html']!, etag: etagOf(body) }, assets };
}

const NOT_BUILT = Buffer.from(
  '<!doctype html><html lang="en"><meta charset="utf-8"><title>auris</title>' +
    '<p>The web console is not built. Run <code>node web/build.mjs</code> (part of <code>scripts/setup.sh</code>). ' +
    'The REST API is at <code>/file-processing/jobs</code>; its documentation at <a href="/docs">/docs</a>.</p></html>',
);

function send(req: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string): FastifyReply {
  void reply
    .header('cache-control', cacheControl)
    .header('etag', asset.etag)
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', CONSOLE_CSP)
    .header('referrer-policy', 'no-referrer');
  if (req.headers['if-none-match'] === asset.etag) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

/** Fastify plugin: GET / and GET /console/:build/:file (HEAD too). Hidden from the OpenAPI document. */
export async function consolePlugin(app: FastifyInstance, opts: ConsoleOptions = {}): Promise<void> {
  const dir = opts.dir ?? defaultConsoleDir();
  let build: Build | null = null;
  const current = (): Build | null => (build ??= loadConsoleBuild(dir));

  app.get('/', { schema: { hide: true } }, async (req, reply) => {
    const b = current();
    if (!b) return reply.code(503).header('cache-control', 'no-store').type(TYPES['.html']!).send(NOT_BUILT);
    return send(req, reply, b.page, 'no-cache');
  });

  app.get<{ Params: { build: string; file: string } }>('/console/:build/:file', { schema: { hide: true } }, async (req, reply) => {
    const b = current();
    const asset = b && req.params.build === b.id ? b.assets.get(req.params.file) : undefined;
    if (!asset) throw new ApiError('NOT_FOUND', `No console file ${req.params.build}/${req.params.file}${b ? '' : ' (the console is not built)'}.`);
    return send(req, reply, asset, 'public, max-age=31536000, immutable');
  });
}
