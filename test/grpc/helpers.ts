/**
 * Helpers of the gRPC streaming tests: a real server on a free loopback port (real models,
 * in this process so the native stream count can be watched), a seeded RNG, test audio made
 * with sox / espeak-ng in a temp dir, and stream runners that send audio in random chunks.
 */
import { strict as assert } from 'node:assert';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { openStreamCount } from '../../src/audio';
import { MissingEnvironment, STRICT } from '../env';
import { ApiKeyRegistry } from '../../src/http/auth';
import { AnalysisGrpcServer, GrpcServerOptions } from '../../src/grpc/server';
import { AnalysisClient, createClient, openAnalyzeStream } from '../../src/grpc/client';
import type { StepResultMsg, StreamConfigMsg } from '../../src/grpc/proto';
import type { TimeStepResult } from '../../src/analysis/postprocess';
import { checkStepOrder, type StepMessage } from '../streaming/order';

export const API_KEY = 'grpc-test-key-0001';

export interface TestServer {
  srv: AnalysisGrpcServer;
  port: number;
  address: string;
  client: AnalysisClient;
  close(): Promise<void>;
}

export async function startServer(options: Partial<GrpcServerOptions> = {}): Promise<TestServer> {
  const srv = await AnalysisGrpcServer.create({
    keys: new ApiKeyRegistry([{ key: API_KEY, organizationId: 'org', projectId: 'proj' }]),
    inferenceThreads: 1,
    ...options,
  });
  const port = await srv.listen('127.0.0.1', 0);
  const address = `127.0.0.1:${port}`;
  const client = createClient(address);
  return {
    srv,
    port,
    address,
    client,
    async close() {
      client.close();
      await srv.close(1000);
    },
  };
}

let tmp: string | undefined;
export function tmpDir(): string {
  if (!tmp) {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-grpc-test-'));
    const dir = tmp;
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return tmp;
}

export function sh(cmd: string, args: string[]): Buffer {
  return execFileSync(cmd, args, { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Deterministic PRNG (mulberry32) in [0, 1). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A 44.1 kHz stereo 16-bit WAV (about 7.3 s): left = a plucked chord then silence, right =
 * espeak-ng speech, a pause, more speech. Exercises resampling and channel selection.
 */
export function stereoSpeechWav(): string {
  const out = path.join(tmpDir(), 'stereo-44k.wav');
  if (fs.existsSync(out)) return out;
  const d = tmpDir();
  sh('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', path.join(d, 's1.wav'), 'Streaming analysis should give the same answers as a file job.']);
  sh('espeak-ng', ['-v', 'en-us+f3', '-s', '160', '-w', path.join(d, 's2.wav'), 'Every chunk size must work, from one sample to three seconds.']);
  sh('sox', ['-V1', path.join(d, 's1.wav'), '-r', '44100', '-c', '1', '-b', '16', path.join(d, 's1r.wav')]);
  sh('sox', ['-V1', path.join(d, 's2.wav'), '-r', '44100', '-c', '1', '-b', '16', path.join(d, 's2r.wav')]);
  sh('sox', ['-V1', '-n', '-r', '44100', '-c', '1', '-b', '16', path.join(d, 'gap.wav'), 'trim', '0', '0.7']);
  sh('sox', ['-V1', path.join(d, 's1r.wav'), path.join(d, 'gap.wav'), path.join(d, 's2r.wav'), path.join(d, 'right.wav')]);
  const len = Number(sh('soxi', ['-D', path.join(d, 'right.wav')]).toString().trim());
  sh('sox', ['-V1', '-n', '-r', '44100', '-c', '1', '-b', '16', path.join(d, 'left.wav'), 'synth', String(len * 0.6), 'pluck', 'C3', 'pluck', 'E3', 'pluck', 'G3', 'vol', '0.3', 'pad', '0', String(len * 0.4)]);
  sh('sox', ['-V1', '-M', path.join(d, 'left.wav'), path.join(d, 'right.wav'), out]);
  return out;
}

/** Raw interleaved s16le PCM of a 16-bit file (exactly the samples the decoder sees). */
export function s16Pcm(file: string): Buffer {
  return sh('ffmpeg', ['-v', 'error', '-i', file, '-f', 's16le', '-acodec', 'pcm_s16le', '-']);
}

/** Sizes in bytes covering `total`: log-uniform between `min` and `max` bytes (any alignment). */
export function randomChunks(total: number, min: number, max: number, rand: () => number): number[] {
  const out: number[] = [];
  let left = total;
  const lmin = Math.log(min), lmax = Math.log(max);
  while (left > 0) {
    const n = Math.max(1, Math.min(left, Math.round(Math.exp(lmin + rand() * (lmax - lmin)))));
    out.push(n);
    left -= n;
  }
  return out;
}

export interface StreamOutcome {
  /** The final step results, in order (their `final` field removed once checked). */
  steps: StepResultMsg[];
  /** The provisional step results (final false/absent), in order. */
  provisional: StepResultMsg[];
  summary: StepResultMsg | undefined;
  status: grpc.StatusObject;
  metadata: grpc.Metadata;
}

/** Streams `pcm` in the given chunk sizes (bytes) and collects every response and the status. */
export async function streamPcm(
  client: AnalysisClient,
  config: StreamConfigMsg,
  pcm: Buffer,
  chunks: number[] = [pcm.length],
  /** null: no x-api-key at all. */
  apiKey: string | null = API_KEY,
): Promise<StreamOutcome> {
  const h = openAnalyzeStream(client, apiKey ?? undefined, config);
  const got: StepResultMsg[] = [];
  h.call.on('data', (m: StepResultMsg) => got.push(m));
  let off = 0;
  for (const n of chunks) {
    await h.send(pcm.subarray(off, off + n));
    off += n;
  }
  h.end();
  const status = await h.status;
  const metadata = await h.metadata;
  const summary = got.length > 0 && got.at(-1)!.summary ? got.pop() : undefined;
  return { ...splitProvisional(got), summary, status, metadata };
}

/**
 * Checks the protocol of step messages (test/streaming/order.ts) and splits them: finals have
 * final = true, provisionals none (false is absent on the wire), the summary message neither.
 * `final` is removed from both.
 */
export function splitProvisional(msgs: StepResultMsg[]): { steps: StepResultMsg[]; provisional: StepResultMsg[] } {
  const steps: StepResultMsg[] = [];
  const provisional: StepResultMsg[] = [];
  const order: StepMessage[] = [];
  for (const m of msgs) {
    const { final, ...rest } = m;
    if (m.summary || (m.transitions && Object.keys(m.transitions).length > 0)) {
      assert.equal(final, undefined, 'the summary/transitions message has final = false');
      steps.push(m);
      continue;
    }
    order.push({ timestamp: Number(m.timestamp), final: final === true, results: (m.results ?? {}) as StepMessage['results'] });
    (final === true ? steps : provisional).push(rest);
  }
  checkStepOrder(order);
  return { steps, provisional };
}

export function errorCodeOf(status: grpc.StatusObject): string | undefined {
  const v = status.metadata?.get('auris-error-code')[0];
  return v === undefined ? undefined : String(v);
}

/** openStreamCount(), or undefined when the addon predates it (strict mode: an error). */
export function nativeStreams(): number | undefined {
  try {
    return openStreamCount();
  } catch {
    if (STRICT) throw new MissingEnvironment('the native addon has no openStreamCount(); rebuild it (npm run setup)');
    return undefined;
  }
}

/** Polls `cond` every 10 ms until true (fails after `ms`). */
export async function waitFor(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Documented tolerance (docs/streaming.md): one unit of the 4th decimal, from float32 rounding of other window lengths. */
export const TOL = 1e-4 + 1e-9;

/** Compares streamed steps (SPEC JSON) with a file job's time series: same timestamps and labels, confidences and raw within TOL. */
export function assertSameAsFile(steps: readonly TimeStepResult[], series: readonly TimeStepResult[], models: string[]): void {
  assert.equal(steps.length, series.length, 'one streamed step per output step of the file job');
  for (let i = 0; i < series.length; i++) {
    const s = steps[i]!;
    const f = series[i]!;
    assert.equal(s.timestamp, f.timestamp, `timestamp of step ${i}`);
    assert.deepEqual(Object.keys(s.results), models);
    for (const m of models) {
      assert.equal(s.results[m]!.result, f.results[m]!.result, `label of ${m} at ${f.timestamp} ms`);
      const d = Math.abs(s.results[m]!.confidence - f.results[m]!.confidence);
      assert.ok(d <= TOL, `confidence of ${m} at ${f.timestamp} ms: ${s.results[m]!.confidence} vs ${f.results[m]!.confidence}`);
      if (f.raw) {
        for (const [k, v] of Object.entries(f.raw[m]!)) {
          assert.ok(Math.abs(s.raw![m]![k]! - v) <= TOL, `raw ${m}.${k} at ${f.timestamp} ms`);
        }
      }
    }
  }
}

/** Runs a command asynchronously (the server lives in this process), resolves with its output. */
export function runAsync(cmd: string, args: string[], options: { env?: NodeJS.ProcessEnv; input?: Buffer } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? Buffer.alloc(0));
  });
}


/** Sends `requests` on one server-reflection call (grpc.reflection.v1) and returns the replies in order. */
export async function reflectionQuery(address: string, requests: object[]): Promise<any[]> {
  const protoPath = path.join(path.dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
  const def = protoLoader.loadSync(protoPath, { keepCase: true });
  const Reflection = (grpc.loadPackageDefinition(def) as any).grpc.reflection.v1.ServerReflection as grpc.ServiceClientConstructor;
  const c = new Reflection(address, grpc.credentials.createInsecure()) as any;
  const call = c.ServerReflectionInfo();
  const replies: any[] = [];
  const done = new Promise<void>((resolve, reject) => {
    call.on('data', (r: unknown) => replies.push(r));
    call.on('end', resolve);
    call.on('error', reject);
  });
  for (const r of requests) call.write(r);
  call.end();
  await done;
  c.close();
  return replies;
}
