/**
 * Shared helpers of the REST tests: a real server on 127.0.0.1:0, a fake analyzer for
 * lifecycle tests, local callback receivers and generated audio.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AudioInfo, AudioSource } from '../../src/audio/types';
import type { DeepPartial, Config } from '../../src/config';
import { defaultConfig } from '../../src/config';
import type { AnalysisRequest } from '../../src/analysis/options';
import type { Analyzer, AnalyzeRun, ChannelResults } from '../../src/pipeline/analyzer';
import { createServer, type AurisServer, type ServerOptions } from '../../src/http/server';

export const KEY_A = 'key-project-a-0001';
export const KEY_B = 'key-project-b-0002';
export const KEY_A2 = 'key-project-a-0003'; // same project as KEY_A, another key

export function tempDir(prefix = 'auris-test-'): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

export function testConfig(dataDir: string, overrides: DeepPartial<Config> = {}): Config {
  const base = defaultConfig({
    host: '127.0.0.1',
    port: 0,
    dataDir,
    concurrency: 2,
    apiKeys: [
      { key: KEY_A, organizationId: 'org-a', projectId: 'proj-a' },
      { key: KEY_B, organizationId: 'org-b', projectId: 'proj-b' },
      { key: KEY_A2, organizationId: 'org-a', projectId: 'proj-a' },
    ],
    callbacks: { backoffMs: 20 },
    jobRetryBackoffMs: 20, // a job whose processing failed is retried quickly in tests
    download: { urlAllowlist: ['127.0.0.1'] }, // test file hosts and callback receivers listen on 127.0.0.1 (SSRF allowlist)
    logLevel: 'silent',
  });
  return defaultConfig({ ...base, ...overrides, limits: { ...base.limits, ...overrides.limits }, callbacks: { ...base.callbacks, ...overrides.callbacks } } as DeepPartial<Config>);
}

export async function startServer(dataDir: string, opts: Omit<ServerOptions, 'config'> & { config?: DeepPartial<Config> } = {}): Promise<AurisServer> {
  const { config, ...rest } = opts;
  const server = await createServer({ logger: false, ...rest, config: testConfig(dataDir, config) });
  await server.listen();
  return server;
}

/** fetch against the server with an API key. */
export function api(server: AurisServer, key: string | null) {
  return (path: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    if (key !== null) headers.set('x-api-key', key);
    return fetch(server.url + path, { ...init, headers });
  };
}

export interface CreateArgs {
  query?: string;
  url?: string;
  audio?: Buffer;
  contentType?: string;
}

export async function createJob(server: AurisServer, key: string, args: CreateArgs): Promise<Response> {
  const q = args.query ?? 'models=speech&output_period=1024';
  if (args.url !== undefined) {
    return api(server, key)(`/file-processing/jobs?${q}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: args.url }),
    });
  }
  return api(server, key)(`/file-processing/jobs?${q}`, {
    method: 'POST',
    headers: { 'content-type': args.contentType ?? 'audio/wav' },
    body: args.audio ?? fakeWav(),
  });
}

/** Polls the job until `pred` holds (or throws after `timeoutMs`). */
export async function waitForJob(
  server: AurisServer,
  key: string,
  jobId: string,
  pred: (job: JobJson) => boolean = (j) => j.status === 'succeeded' || j.status === 'failed',
  timeoutMs = 15_000,
): Promise<JobJson> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(server, key)(`/file-processing/jobs/${jobId}`);
    const job = (await res.json()) as JobJson;
    if (res.status === 200 && pred(job)) return job;
    if (Date.now() > deadline) throw new Error(`job ${jobId} did not reach the state; last: ${JSON.stringify(job)}`);
    await sleep(25);
  }
}

export async function waitFor<T>(fn: () => T | Promise<T>, timeoutMs = 20_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface JobJson {
  job_id: string;
  status: string;
  progress: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  expires_at: string | null;
  request: Record<string, unknown>;
  source: { method: string; url: string | null; content_type: string | null; size_bytes: number | null };
  audio: { duration_sec: number; channels: number; sample_rate: number; format: string; processed_channels: number } | null;
  results_url: string | null;
  results_size_bytes: number | null;
  error: { code: string; message: string } | null;
}

/** A few bytes that look like a WAV upload to the server (the fake analyzer does not decode). */
export function fakeWav(bytes = 1000): Buffer {
  const b = Buffer.alloc(bytes);
  b.write('RIFF', 0);
  b.write('WAVE', 8);
  return b;
}

/**
 * An analyzer for lifecycle tests. Every call waits on `gate` (if set) between progress
 * steps, reports info, and returns a tiny channels object; `fail` makes it throw.
 */
export class FakeAnalyzer implements Analyzer {
  models = ['speech', 'arousal', 'gender'];
  calls: Array<{ source: AudioSource; options: AnalysisRequest; run: AnalyzeRun }> = [];
  info: AudioInfo = { sampleRate: 16000, channels: 1, frames: 32000, durationSec: 2, format: 'WAV', subtype: 'PCM_16' };
  /** When set, each progress step waits for release(). */
  gated = false;
  private waiters: Array<() => void> = [];
  fail: Error | null = null;
  /** Output size knob: time steps per channel. */
  steps = 2;
  running = 0;

  listModels(): string[] {
    return this.models;
  }

  /** Lets every gated analysis take one step. */
  release(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  get waiting(): number {
    return this.waiters.length;
  }

  private async step(signal?: AbortSignal): Promise<void> {
    if (!this.gated) return;
    await new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(Object.assign(new Error('aborted'), { code: 'ABORTED' }));
      this.waiters.push(resolve);
      signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { code: 'ABORTED' })), { once: true });
    });
  }

  async analyze(source: AudioSource, options: AnalysisRequest, hooks: AnalyzeRun): Promise<ChannelResults> {
    this.calls.push({ source, options, run: hooks });
    this.running++;
    try {
      hooks.onProgress?.(0);
      await this.step(hooks.signal);
      hooks.onInfo?.(this.info);
      if (hooks.signal?.aborted) throw Object.assign(new Error('aborted'), { code: 'ABORTED' });
      hooks.onProgress?.(0.5);
      await this.step(hooks.signal);
      if (this.fail) throw this.fail;
      hooks.onProgress?.(1);
      const ts = Array.from({ length: this.steps }, (_, i) => ({
        timestamp: i * options.outputPeriodMs,
        results: Object.fromEntries(options.models.map((m) => [m, { result: 'silence', confidence: 1 }])),
      }));
      return { '0': { time_series: ts } };
    } finally {
      this.running--;
    }
  }
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** A callback receiver on 127.0.0.1: `respond` picks the status (and may delay). */
export async function startReceiver(
  respond: (req: Received, n: number) => number | Promise<number> = () => 200,
): Promise<{ url: string; received: Received[]; close(): Promise<void>; server: Server }> {
  const received: Received[] = [];
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      void Promise.resolve(respond(r, received.length)).then((status) => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    server,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Generates a WAV with sox (args after the output file, e.g. ['synth', '2', 'sine', '440']). */
export function sox(path: string, rate: number, channels: number, ...effects: string[]): string {
  execFileSync('sox', ['-n', '-r', String(rate), '-c', String(channels), '-b', '16', path, ...effects], { stdio: 'pipe' });
  return path;
}

/**
 * A callback body is the job record when the job finished: the same bytes as GET but for
 * `callback`, the delivery state, which was still pending when it was sent.
 */
export function assertCallbackBodyIsRecord(body: string, getText: string): void {
  const sent = JSON.parse(body) as { callback: { url: string } | null };
  const now = JSON.parse(getText) as Record<string, unknown>;
  if (sent.callback) assert.deepEqual(sent.callback, { url: sent.callback.url, state: 'pending', attempts: 0, last_status: null, last_error: null });
  assert.equal(body, JSON.stringify({ ...now, callback: sent.callback }), 'callback body = GET body but for callback');
}
