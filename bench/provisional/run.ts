/**
 * `npm run bench:provisional` (node dist/bench/provisional/run.js [--seconds 10] [--levels 1,50]
 * [--sets 'speech;speech,arousal,gender;speech,speakers'] [--skip-latency] [--skip-accuracy] [--in-process]):
 * provisional results of live streams (docs/streaming.md).
 *
 * 1. Latency: the service (src/app.ts, default settings) in its own process (bench/grpc/server.ts, as
 *    `npm run bench:grpc` runs it; `--in-process`: in this one, as before session 20), N live clients per
 *    transport (WebSocket, gRPC) sending the demo fixture (16 kHz s16le, looped) in real time in
 *    20 ms chunks, output_period 64, for `speech` and for `speech,arousal,gender`. Provisional
 *    latency, per model, of step k = time the first message with that model's provisional result
 *    is received - time the chunk holding the step's last sample ((k+1)*1024) was sent: end to
 *    end, the model's lookahead included (speech 64 ms, gender and arousal none, plus up to 3
 *    steps of their 4-step cadence: src/inference/provisional-runner.ts provisionalPlan). Also:
 *    per model, the share of steps that got a provisional result, and the finals' latency beyond
 *    the lookahead.
 * 2. Accuracy: StreamSession fed one 64 ms step at a time with one plan for every model (P = 2
 *    steps of lookahead, every step; each step's provisional result awaited before the next
 *    step), on test/fixtures/demo.flac and test/fixtures/models/*.flac: per model, the share of
 *    provisional labels the final changed, and for speech the F1 of "speech" against every other
 *    label, finals as reference. Against the truth, per plan: training/validate/provisional.py.
 * Numbers, never pass/fail. Clients share the server's cores: on 2 cores the figures include the
 * clients' own CPU (and, with --in-process, their event loop is the server's).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import WebSocket from 'ws';
import { decodeAll } from '../../src/audio';
import { startApp } from '../../src/app';
import { defaultConfig } from '../../src/config';
import { streamQuery } from '../../src/client/stream';
import { createClient, openAnalyzeStream, type AnalysisClient } from '../../src/grpc/client';
import type { StepResultMsg } from '../../src/grpc/proto';
import { sharedEngine } from '../../src/inference/engine';
import { ModelRegistry } from '../../src/inference/registry';
import { StreamSession } from '../../src/pipeline/analyze-stream';
import { BENCH_KEY, ServerProcess } from '../grpc/server-process';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const P = 2;
const log = (m: string): void => void process.stderr.write(`[bench:provisional] ${m}\n`);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! * 10) / 10;
}

function s16(samples: Float32Array, seconds: number): Buffer {
  const n = Math.round(seconds * 16000);
  const out = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(samples[i % samples.length]! * 32768))), i * 2);
  return out;
}

interface Run {
  /** Per model: step audio sent -> the first message with its provisional result, ms (lookahead included). */
  prov: Record<string, number[]>;
  final: number[];
  steps: number;
  provSteps: Record<string, number>;
}

/** One real-time stream: 20 ms chunks, provisional and final latencies. */
function liveStream(transport: 'ws' | 'grpc', url: string, client: AnalysisClient, models: string[], lookahead: number, pcm: Buffer, startAt: number): Promise<Run> {
  const chunk = 320;
  const total = pcm.length / 2;
  const chunks = Math.ceil(total / chunk);
  const sentAt = new Float64Array(chunks);
  const run: Run = { prov: Object.fromEntries(models.map((m) => [m, []])), final: [], steps: 0, provSteps: Object.fromEntries(models.map((m) => [m, 0])) };
  const seen = new Map<number, Set<string>>();
  const onStep = (t: number, final: boolean, results: Record<string, unknown>): void => {
    const now = performance.now();
    const k = t / 64;
    // finals: beyond the lookahead (from the chunk with the last sample the models need);
    // provisionals: from the chunk with the step's own last sample, per model
    const due = final ? (k + 1 + lookahead) * 1024 + 128 : (k + 1) * 1024;
    if ((k + 1 + lookahead) * 1024 + 128 > total) return;
    // a result can come before the chunk `due` names is sent: the speaker map's finals need 13 to 24 steps of
    // lookahead, not its manifest's 24 (docs/speakers.md), so theirs are 0 then, not the time since the stream began
    const at = Math.ceil(due / chunk) - 1;
    const lat = sentAt[at]! > 0 ? now - sentAt[at]! : 0;
    if (final) {
      run.steps++;
      run.final.push(lat);
      seen.delete(t);
      return;
    }
    const had = seen.get(t) ?? new Set<string>();
    for (const m of Object.keys(results)) {
      if (had.has(m) || !run.prov[m]) continue;
      had.add(m);
      run.provSteps[m]!++;
      run.prov[m]!.push(lat);
    }
    seen.set(t, had);
  };
  let send: (b: Buffer) => void;
  let end: () => void;
  let done: Promise<void>;
  if (transport === 'grpc') {
    const h = openAnalyzeStream(client, BENCH_KEY, { models, output_period: 64, sample_rate: 16000, encoding: 'PCM_S16LE' });
    h.call.on('data', (m: StepResultMsg) => !m.summary && onStep(Number(m.timestamp), m.final === true, m.results ?? {}));
    send = (b) => void h.call.write({ audio: b });
    end = () => h.end();
    done = h.status.then(() => undefined);
  } else {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/stream?${streamQuery({ models, outputPeriodMs: 64, sampleRate: 16000 })}`, { headers: { 'x-api-key': BENCH_KEY }, perMessageDeflate: false });
    const pending: Buffer[] = [];
    ws.on('open', () => pending.splice(0).forEach((p) => ws.send(p)));
    ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString('utf8')) as { type?: string; timestamp: number; final: boolean; results: Record<string, unknown> };
      if (m.type === undefined) onStep(m.timestamp, m.final, m.results);
    });
    ws.on('error', () => undefined);
    send = (b) => (ws.readyState === WebSocket.OPEN ? ws.send(b) : pending.push(b));
    end = () => ws.send(JSON.stringify({ type: 'end' }));
    done = new Promise((r) => ws.on('close', () => r()));
  }
  let k = 0;
  const next = (): void => {
    if (k >= chunks) return end();
    sentAt[k] = performance.now();
    send(pcm.subarray(k * chunk * 2, Math.min(total, (k + 1) * chunk) * 2));
    k++;
    setTimeout(next, Math.max(0, startAt + (k + 1) * 20 - performance.now()));
  };
  setTimeout(next, Math.max(0, startAt + 20 - performance.now()));
  return done.then(() => run);
}

/** The service for the latency runs: in its own process (bench/grpc/server.ts, as `npm run bench:grpc` runs it), or in this one. */
interface Service {
  url: string;
  grpcPort: number;
  /** CPU seconds the service has used (its own process), or undefined when it runs in this one. */
  cpuSec(): Promise<number | undefined>;
  close(): Promise<void>;
}

async function startService(inProcess: boolean): Promise<Service> {
  if (!inProcess) {
    const { proc, port, url } = await ServerProcess.start('stateful');
    return { url, grpcPort: port, cpuSec: async () => (await proc.usage()).cpuSec, close: () => proc.stop() };
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-bench-prov-'));
  const app = await startApp({
    logger: false,
    config: defaultConfig({ host: '127.0.0.1', port: 0, grpcPort: 0, dataDir, apiKeys: [{ key: BENCH_KEY, organizationId: 'o', projectId: 'p' }], logLevel: 'silent' }),
  });
  return {
    url: app.url,
    grpcPort: app.grpcPort!,
    cpuSec: async () => undefined,
    close: async () => {
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function latency(seconds: number, levels: number[], inProcess: boolean, sets: string[][]): Promise<unknown[]> {
  const service = await startService(inProcess);
  const { samples } = await decodeAll({ path: path.join(ROOT, 'test', 'fixtures', 'demo.flac') });
  const pcm = s16(samples, seconds);
  const registry = ModelRegistry.loadSync();
  const rows: unknown[] = [];
  try {
    for (const models of sets) {
      const lookahead = Math.max(...registry.resolve(models).map((m) => m.context.rightSteps));
      for (const transport of ['ws', 'grpc'] as const) {
        for (const n of levels) {
          const clients = Array.from({ length: Math.max(1, Math.ceil(n / 25)) }, () => createClient(`127.0.0.1:${service.grpcPort}`));
          await liveStream(transport, service.url, clients[0]!, models, lookahead, s16(samples, 2), performance.now()); // warm-up
          const cpu0 = process.cpuUsage();
          const server0 = await service.cpuSec();
          const t0 = performance.now();
          const runs = await Promise.all(Array.from({ length: n }, (_, i) => liveStream(transport, service.url, clients[i % clients.length]!, models, lookahead, pcm, t0 + 50 + (i / n) * 20)));
          const wall = (performance.now() - t0) / 1000;
          const cpu = process.cpuUsage(cpu0);
          const server1 = await service.cpuSec();
          for (const c of clients) c.close();
          const fin = runs.flatMap((r) => r.final).sort((a, b) => a - b);
          const steps = runs.reduce((a, r) => a + r.steps, 0);
          const provisional: Record<string, unknown> = {};
          for (const m of models) {
            const prov = runs.flatMap((r) => r.prov[m]!).sort((a, b) => a - b);
            provisional[m] = { p50: pct(prov, 50), p99: pct(prov, 99), max: pct(prov, 100), stepsWithProvisionalPercent: Math.round((prov.length / Math.max(1, steps)) * 1000) / 10 };
          }
          const percent = (sec: number): number => Math.round((sec / wall) * 100);
          const row = {
            models: models.join(','),
            transport,
            streams: n,
            server: inProcess ? 'in this process' : 'own process',
            provisionalFromStepAudio: provisional,
            finalBeyondLookahead: { p50: pct(fin, 50), p99: pct(fin, 99) },
            // in this process: the server and the clients together
            processCpuPercent: percent((cpu.user + cpu.system) / 1e6),
            ...(server0 !== undefined && server1 !== undefined ? { serverCpuPercent: percent(server1 - server0) } : {}),
            load1: os.loadavg()[0]!.toFixed(2),
          };
          log(JSON.stringify(row));
          rows.push(row);
        }
      }
    }
  } finally {
    await service.close();
  }
  return rows;
}

/** Labels of one file, provisional (exactly P steps of lookahead) and final, per model and step. */
async function labelsOf(file: string, models: string[]): Promise<Record<string, { prov: Map<number, string>; final: Map<number, string> }>> {
  const engine = await sharedEngine();
  const { info, samples } = await decodeAll({ path: file });
  const out: Record<string, { prov: Map<number, string>; final: Map<number, string> }> = {};
  for (const m of models) out[m] = { prov: new Map(), final: new Map() };
  const seen = new Set<number>();
  const session = new StreamSession(
    engine,
    { models, outputPeriodMs: 64, sampleRate: info.sampleRate, encoding: 'f32le', channels: info.channels, channel: 0, includeRaw: false, includeSummary: false, includeTransitions: false, provisional: true, provisionalPlan: { lookahead: P, stride: 1, leftContext: 24 } },
    {
      onStep: (step, final) => {
        const k = step.timestamp / 64;
        if (final) seen.add(k);
        else seen.add(-1 - k);
        // a provisional message carries the models of its tier only (speech's comes first, on its own)
        for (const m of models) {
          const r = step.results[m];
          if (r) (final ? out[m]!.final : out[m]!.prov).set(k, r.result);
        }
      },
      onError: (e) => {
        throw e;
      },
    },
  );
  const per = Math.round((info.sampleRate * 64) / 1000) * info.channels;
  for (let off = 0; off < samples.length; off += per) {
    const piece = samples.slice(off, Math.min(samples.length, off + per));
    session.push(new Uint8Array(piece.buffer));
    const k = session.stepsReceived - P - 1; // the step whose provisional just became possible
    for (let i = 0; k >= 0 && !seen.has(-1 - k) && !seen.has(k) && i < 2000; i++) await sleep(1);
  }
  await session.end();
  session.close();
  return out;
}

async function accuracy(): Promise<unknown> {
  const files = [path.join(ROOT, 'test', 'fixtures', 'demo.flac'), ...fs.readdirSync(path.join(ROOT, 'test', 'fixtures', 'models')).filter((f) => f.endsWith('.flac')).map((f) => path.join(ROOT, 'test', 'fixtures', 'models', f))];
  const models = ['speech', 'arousal', 'gender'];
  const tally: Record<string, { n: number; changed: number; tp: number; fp: number; fn: number }> = {};
  for (const m of models) tally[m] = { n: 0, changed: 0, tp: 0, fp: 0, fn: 0 };
  const perFile: Record<string, unknown> = {};
  for (const file of files) {
    const labels = await labelsOf(file, models);
    const row: Record<string, unknown> = {};
    for (const m of models) {
      const t = tally[m]!;
      const f = { n: 0, changed: 0 };
      for (const [k, p] of labels[m]!.prov) {
        const fin = labels[m]!.final.get(k);
        if (fin === undefined) continue;
        t.n++;
        f.n++;
        if (p !== fin) (t.changed++, f.changed++);
        if (m === 'speech') {
          if (p === 'speech' && fin === 'speech') t.tp++;
          else if (p === 'speech') t.fp++;
          else if (fin === 'speech') t.fn++;
        }
      }
      row[m] = { steps: f.n, changedPercent: Math.round((f.changed / Math.max(1, f.n)) * 1000) / 10 };
    }
    perFile[path.basename(file)] = row;
    log(`${path.basename(file)}: ${JSON.stringify(row)}`);
  }
  const total: Record<string, unknown> = {};
  for (const m of models) {
    const t = tally[m]!;
    total[m] = { steps: t.n, changedPercent: Math.round((t.changed / Math.max(1, t.n)) * 1000) / 10, ...(m === 'speech' ? { speechF1: Math.round(((2 * t.tp) / Math.max(1, 2 * t.tp + t.fp + t.fn)) * 1000) / 10 } : {}) };
  }
  log(`all files: ${JSON.stringify(total)}`);
  return { perFile, total };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const arg = (k: string, d: string): string => {
    const i = argv.indexOf(k);
    return i >= 0 ? argv[i + 1]! : d;
  };
  const result: Record<string, unknown> = { cores: os.availableParallelism(), P_ms: P * 64 };
  if (!argv.includes('--skip-accuracy')) result.accuracy = await accuracy();
  const sets = arg('--sets', 'speech;speech,arousal,gender;speech,speakers').split(';').map((x) => x.split(','));
  if (!argv.includes('--skip-latency')) result.latency = await latency(Number(arg('--seconds', '10')), arg('--levels', '1,50').split(',').map(Number), argv.includes('--in-process'), sets);
  process.stdout.write(JSON.stringify(result, null, 1) + '\n');
  process.exit(0);
}

void main();
