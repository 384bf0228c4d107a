/**
 * Signed callbacks (Standard Webhooks) and the callback outcome on the job record, against
 * real local receivers. The signature is checked here with node:crypto's HMAC, independently
 * of the service's signing code and of the exported verifyCallback helper (tested as well).
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { EVENT_ID_HEADER } from '../../src/callbacks/dispatcher';
import { verifyCallback, CallbackVerificationError, MemoryWebhookIdStore } from '../../src';
import type { AurisServer } from '../../src/http/server';
import { startCallbackReceiver } from '../../examples/callback-receiver';
import { api, createJob, FakeAnalyzer, KEY_A, KEY_B, startReceiver, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

/** The Standard Webhooks signature, computed without the service's code. */
function expectedSignature(secret: string, id: string, timestamp: string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
}

async function secretOf(server: AurisServer, key: string): Promise<string> {
  const res = await api(server, key)('/file-processing/callback-secret');
  assert.equal(res.status, 200);
  const body = (await res.json()) as { secret: string; scheme: string };
  assert.equal(body.scheme, 'standard-webhooks');
  return body.secret;
}

interface CallbackJson extends JobJson {
  callback: { url: string; state: string; attempts: number; last_status: number | null; last_error: string | null } | null;
}

describe('signed callbacks', () => {
  const dir = tempDir();
  let server: AurisServer;
  const configured = 'whsec_' + randomBytes(32).toString('base64');

  before(async () => {
    server = await startServer(dir.path, {
      analyzer: new FakeAnalyzer(),
      config: { callbacks: { timeoutMs: 1000, backoffMs: 20, secrets: [`org-b:proj-b:${configured}`] } },
      // private.test resolves to a private address that the allowlist (127.0.0.1) does not cover
      download: { resolver: async (h) => (h === 'private.test' ? [{ address: '10.9.9.9', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]) },
    });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  it('every callback carries webhook-id (the event id), webhook-timestamp and a v1 HMAC-SHA256 signature with the project secret', async () => {
    const rx = await startReceiver(() => 200);
    try {
      const secret = await secretOf(server, KEY_A);
      assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(rx.url)}` });
      const job = (await res.json()) as CallbackJson;
      assert.deepEqual(job.callback, { url: rx.url, state: 'pending', attempts: 0, last_status: null, last_error: null });
      await waitFor(() => rx.received.length === 1, 10_000, 'callback');
      const got = rx.received[0]!;
      const id = String(got.headers['webhook-id']);
      const ts = String(got.headers['webhook-timestamp']);
      assert.equal(id, got.headers[EVENT_ID_HEADER]);
      assert.ok(Math.abs(Number(ts) - Date.now() / 1000) < 60, 'timestamp is now, in seconds');
      assert.equal(got.headers['webhook-signature'], expectedSignature(secret, id, ts, got.body));
      // Another project's secret does not verify it.
      assert.notEqual(got.headers['webhook-signature'], expectedSignature(await secretOf(server, KEY_B), id, ts, got.body));

      // The helper for receivers: accepts the genuine request once, then refuses a replay, a changed body, a stale timestamp.
      const seen = new MemoryWebhookIdStore();
      const headers = got.headers as Record<string, string>;
      const parsed = await verifyCallback<CallbackJson>(got.body, headers, { secret, seenIds: seen });
      assert.equal(parsed.job_id, job.job_id);
      await assert.rejects(verifyCallback(got.body, headers, { secret, seenIds: seen }), (e: CallbackVerificationError) => e.code === 'REPLAYED');
      await assert.rejects(verifyCallback(got.body.replace('succeeded', 'failed'), headers, { secret }), (e: CallbackVerificationError) => e.code === 'INVALID_SIGNATURE');
      await assert.rejects(verifyCallback(got.body, headers, { secret: await secretOf(server, KEY_B) }), (e: CallbackVerificationError) => e.code === 'INVALID_SIGNATURE');
      await assert.rejects(
        verifyCallback(got.body, headers, { secret, now: new Date((Number(ts) + 301) * 1000) }),
        (e: CallbackVerificationError) => e.code === 'TIMESTAMP_OUT_OF_WINDOW',
      );
      await assert.rejects(verifyCallback(got.body, { ...headers, 'webhook-signature': '' }, { secret }), (e: CallbackVerificationError) => e.code === 'MISSING_HEADER');

      // The outcome on the job record.
      const after = (await waitForJob(server, KEY_A, job.job_id, (j) => (j as CallbackJson).callback?.state === 'delivered')) as CallbackJson;
      assert.deepEqual(after.callback, { url: rx.url, state: 'delivered', attempts: 1, last_status: 200, last_error: null });
    } finally {
      await rx.close();
    }
  });

  it('a configured project secret (CALLBACK_SECRETS) signs that project\'s callbacks; every retry is signed with its own timestamp', async () => {
    assert.equal(await secretOf(server, KEY_B), configured);
    const rx = await startReceiver((_r, n) => (n < 2 ? 503 : 200));
    try {
      const res = await createJob(server, KEY_B, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(rx.url)}` });
      const job = (await res.json()) as CallbackJson;
      await waitFor(() => rx.received.length === 2, 10_000, '2 attempts');
      for (const got of rx.received) {
        const id = String(got.headers['webhook-id']);
        assert.equal(got.headers['webhook-signature'], expectedSignature(configured, id, String(got.headers['webhook-timestamp']), got.body));
      }
      const after = (await waitForJob(server, KEY_B, job.job_id, (j) => (j as CallbackJson).callback?.state === 'delivered')) as CallbackJson;
      assert.equal(after.callback?.attempts, 2);
      assert.equal(after.callback?.last_status, 200);
    } finally {
      await rx.close();
    }
  });

  it('a receiver that keeps answering 500: state failed after 4 attempts, with the last status and error', async () => {
    const rx = await startReceiver(() => 500);
    try {
      const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(rx.url)}` });
      const job = (await res.json()) as CallbackJson;
      const after = (await waitForJob(server, KEY_A, job.job_id, (j) => (j as CallbackJson).callback?.state === 'failed', 15_000)) as CallbackJson;
      assert.equal(after.callback?.attempts, 4);
      assert.equal(after.callback?.last_status, 500);
      assert.match(String(after.callback?.last_error), /500/);
      assert.equal(rx.received.length, 4);
    } finally {
      await rx.close();
    }
  });

  it('a callback host that resolves to a private address is refused, and the record says why', async () => {
    const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent('http://private.test:9/hook')}` });
    assert.equal(res.status, 201);
    const job = (await res.json()) as CallbackJson;
    const after = (await waitForJob(server, KEY_A, job.job_id, (j) => (j as CallbackJson).callback?.state === 'refused')) as CallbackJson;
    assert.equal(after.callback?.attempts, 1);
    assert.equal(after.callback?.last_status, null);
    assert.match(String(after.callback?.last_error), /^refused: .*private\.test.* not allowed/);
    assert.doesNotMatch(String(after.callback?.last_error), /10\.9\.9\.9/, 'never the address the name resolves to (docs/reliability.md)');
  });

  it('a job without callback has callback: null', async () => {
    const job = (await (await createJob(server, KEY_A, {})).json()) as CallbackJson;
    assert.equal(job.callback, null);
    assert.equal((await waitForJob(server, KEY_A, job.job_id) as CallbackJson).callback, null);
  });
});

describe('examples/callback-receiver', () => {
  it('accepts the service\'s signed callback once and refuses a forged one', async () => {
    const dir = tempDir();
    const server = await startServer(dir.path, { analyzer: new FakeAnalyzer() });
    const jobs: string[] = [];
    const refused: string[] = [];
    const secret = await secretOf(server, KEY_A);
    const rx = await startCallbackReceiver({ secret, onJob: (j) => jobs.push(j.job_id), onRefused: (r) => refused.push(r) });
    try {
      const res = await createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(rx.url)}` });
      const job = (await res.json()) as CallbackJson;
      await waitForJob(server, KEY_A, job.job_id, (j) => (j as CallbackJson).callback?.state === 'delivered');
      assert.deepEqual(jobs, [job.job_id]);
      const forged = await fetch(rx.url, {
        method: 'POST',
        headers: { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,' + Buffer.alloc(32).toString('base64') },
        body: '{"job_id":"x","status":"succeeded"}',
      });
      assert.equal(forged.status, 400);
      assert.equal(jobs.length, 1);
      assert.equal(refused.length, 1);
    } finally {
      await rx.close();
      await server.close();
      dir.cleanup();
    }
  });
});
