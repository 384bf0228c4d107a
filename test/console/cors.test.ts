/**
 * CORS from a real browser: a page served by another origin (another port) calls the API
 * with fetch. Chromium sends the preflight (OPTIONS, no API key) because of the x-api-key,
 * Content-Type and Idempotency-Key headers; the allowed origin creates a job, lists it and
 * reads the exposed Location and RateLimit headers; a page on an origin not allowed is blocked.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { FakeAnalyzer, KEY_A, startServer, tempDir } from '../http/helpers';
import { envSkip } from '../env';
import { chromiumUnavailable, launchBrowser } from './helpers';

/** A page origin: serves an empty HTML page on 127.0.0.1 or localhost. */
async function pageOrigin(host: '127.0.0.1' | 'localhost'): Promise<{ origin: string; server: Server }> {
  const server = createHttpServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://${host}:${(server.address() as AddressInfo).port}`, server };
}

/** Runs in the page: POST a job, then GET the list; returns what the page could see. */
const CALL_API = async ({ api, key }: { api: string; key: string }) => {
  try {
    const created = await fetch(`${api}/file-processing/jobs?models=speech&output_period=1024`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'audio/wav', 'idempotency-key': 'browser-1' },
      body: new Uint8Array(1000),
    });
    const job = (await created.json()) as { job_id: string };
    const list = await fetch(`${api}/file-processing/jobs?limit=5`, { headers: { 'x-api-key': key } });
    const page = (await list.json()) as { jobs: Array<{ job_id: string }> };
    return {
      ok: true,
      status: created.status,
      location: created.headers.get('location'),
      rateLimit: list.headers.get('ratelimit'),
      jobId: job.job_id,
      listed: page.jobs.map((j) => j.job_id),
    };
  } catch (err) {
    return { ok: false, error: String(err) };
  }
};

describe('CORS from Chromium', { skip: envSkip(chromiumUnavailable()) }, () => {
  const dir = tempDir();
  let server: AurisServer;
  let allowed: { origin: string; server: Server };
  let other: { origin: string; server: Server };
  let browser: Awaited<ReturnType<typeof launchBrowser>>;

  before(async () => {
    allowed = await pageOrigin('127.0.0.1');
    other = await pageOrigin('localhost'); // same port family, another origin
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { corsOrigins: [allowed.origin] } });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    allowed?.server.close();
    other?.server.close();
    dir.cleanup();
  });

  it('the allowed origin creates and lists jobs across origins (preflight without a key), reading Location and RateLimit', async () => {
    const page = await browser.context.newPage();
    await page.goto(allowed.origin + '/');
    const r = (await page.evaluate(CALL_API, { api: server.url, key: KEY_A })) as { ok: boolean; status: number; location: string; rateLimit: string; jobId: string; listed: string[]; error?: string };
    assert.ok(r.ok, r.error);
    assert.equal(r.status, 201);
    assert.equal(r.location, `/file-processing/jobs/${r.jobId}`);
    assert.match(r.rateLimit, /^"per-key";r=\d+;t=\d+$/);
    assert.ok(r.listed.includes(r.jobId));
    await page.close();
  });

  it('a page on an origin that is not allowed cannot call the API', async () => {
    const page = await browser.context.newPage();
    await page.goto(other.origin + '/');
    const r = (await page.evaluate(CALL_API, { api: server.url, key: KEY_A })) as { ok: boolean; error?: string };
    assert.equal(r.ok, false);
    assert.match(String(r.error), /TypeError: Failed to fetch/);
    // The preflight was refused, so the POST never reached the service: still one job.
    const list = (await (await fetch(`${server.url}/file-processing/jobs`, { headers: { 'x-api-key': KEY_A } })).json()) as { jobs: unknown[] };
    assert.equal(list.jobs.length, 1);
    await page.close();
  });
});
