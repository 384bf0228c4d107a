/**
 * `npm run bench:grpc` (node dist/bench/grpc/run.js [--quick] [--levels 25,50,100] [--seconds 15]
 * [--single-seconds 60] [--transports grpc,ws] [--modes stateful,windowed] [--results all|final] [--sync] [--spread-ms 1600] [--models speech,arousal,gender]; GRPC_BENCH_CHANNELS: most gRPC
 * connections the streams share, default 8): streaming latency
 * and capacity of the streaming service, over gRPC and over the WebSocket in one run.
 *
 * The service runs in its own process (bench/grpc/server.ts: src/app.ts, default settings, one
 * inference worker per core); this process plays live clients: 16 kHz mono s16le audio (the demo
 * fixture, looped) sent in real time, in chunks of `chunkMs`, without waiting for results.
 *
 * Step latency = time the result of an output step is received - time the chunk holding the
 * last sample that step needs was sent. That sample is the end of the step plus the models'
 * lookahead: (k+1)*1024 + right_context*1024 + 128 samples (the framer's half window), so the
 * latency is what the server adds beyond the models' own lookahead. Steps flushed at the end
 * of a stream (no lookahead left) are not counted.
 *
 *  1. one stream (all three models, output_period 64, 20 ms chunks): p50 / p90 / p99 / max;
 *  2. N concurrent streams (all three models, output_period 64, 64 ms chunks) for increasing N:
 *     p50 / p99 / max over every step of every stream, server CPU, and the largest N whose p99
 *     stays under 100 ms. As independent callers would: each stream plays the fixture from its
 *     own offset, and the streams start spread over one encoder window (1.6 s). `--sync`: the
 *     worst case instead - every stream plays the same audio from the start, all within one
 *     chunk, so their speech, and the encoder windows gender's view embeds, come in bursts
 *     (docs/streaming.md "Capacity"). Besides every step's latency, `afterStartup` gives those of
 *     the steps sent once every stream has played 5 s: each stream's first voiced window is
 *     embedded at once, so 300 streams starting within 1.6 s queue ~300 encoder windows together;
 *     after that the load is the sustained one. `encoderRoundTripMs`: the encoder windows' own
 *     time in the pool (queue + call), apart from the networks' calls (`roundTripMs`).
 * Both are run twice, on fresh server processes: with the models' stateful streaming graphs (the
 * default) and with windowed calls only (GRPC_STATEFUL=0, the reference), and the server CPU of
 * the two is compared at each stream count both reached (`--modes stateful` runs one).
 * Numbers, never pass/fail: the machine is shared with model training, see the load average.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decodeAll } from '../../src/audio';
import WebSocket from 'ws';
import { streamQuery } from '../../src/client/stream';
import { createClient, listModels, openAnalyzeStream, AnalysisClient } from '../../src/grpc/client';
import type { StepResultMsg, StreamConfigMsg } from '../../src/grpc/proto';
import { BENCH_KEY as KEY, ServerProcess, type Mode } from './server-process';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const OUT = path.join(ROOT, 'bench', 'out');
/** --models: what every stream asks for (default speech, arousal, gender). */
let MODELS = ['speech', 'arousal', 'gender'];
const TARGET_P99_MS = 100;
/** --results: the streams' results mode (latency is measured on finals either way). */
let RESULTS: 'all' | 'final' = 'all';

function log(msg: string): void {
  process.stderr.write(`[bench:grpc] ${msg}\n`);
}

interface Args {
  quick: boolean;
  levels: number[];
  seconds: number;
  singleSeconds: number;
  modes: Mode[];
  transports: Transport[];
  /** What the streams ask for: provisional + final results (the default) or finals only. */
  results: 'all' | 'final';
  /** Every stream the same audio, started together (the worst case); default: independent streams. */
  sync: boolean;
}

type Transport = 'grpc' | 'ws';

function parseArgs(argv: string[]): Args {
  const a: Args = { quick: false, levels: [25, 50, 100, 150, 200, 300], seconds: 15, singleSeconds: 60, modes: ['stateful'], transports: ['grpc', 'ws'], results: 'all', sync: false };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i];
    if (v === '--quick') {
      a.quick = true;
      a.levels = [10, 50, 100];
      a.seconds = 8;
      a.singleSeconds = 15;
    } else if (v === '--levels') a.levels = argv[++i]!.split(',').map(Number);
    else if (v === '--seconds') a.seconds = Number(argv[++i]);
    else if (v === '--single-seconds') a.singleSeconds = Number(argv[++i]);
    else if (v === '--modes') a.modes = argv[++i]!.split(',') as Mode[];
    else if (v === '--transports') a.transports = argv[++i]!.split(',') as Transport[];
    else if (v === '--results') {
      const r = argv[++i];
      if (r !== 'all' && r !== 'final') throw new Error(`--results must be all or final, got ${r}`);
      RESULTS = a.results = r;
    } else if (v === '--sync') a.sync = true;
    else if (v === '--models') MODELS = argv[++i]!.split(',');
    else if (v === '--spread-ms') {
      SPREAD_MS = Number(argv[++i]);
      if (!(SPREAD_MS >= 0)) throw new Error(`--spread-ms must be a number of ms >= 0, got ${argv[i]}`);
    }
    else throw new Error(`unknown argument ${v}`);
  }
  return a;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

interface LatencyStats {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

function stats(lat: number[]): LatencyStats {
  const s = [...lat].sort((a, b) => a - b);
  const r = (x: number): number => Math.round(x * 10) / 10;
  return { n: s.length, p50: r(percentile(s, 50)), p90: r(percentile(s, 90)), p99: r(percentile(s, 99)), max: r(s.at(-1) ?? NaN) };
}

interface StreamRun {
  latencies: number[];
  /** When each measured step's last needed chunk was sent (performance.now()), beside its latency. */
  sentAt: number[];
  status: number;
  steps: number;
}

/** Where a live stream goes: a gRPC channel, or the WebSocket base URL. */
type Target = { transport: 'grpc'; client: AnalysisClient } | { transport: 'ws'; url: string };

/** The minimal live client of either transport: send audio, be told of each step, end. */
interface LiveConnection {
  send(audio: Buffer): void;
  end(): void;
  /** 0 when the stream ended normally. */
  done: Promise<number>;
}

function connect(target: Target, periodMs: number, onStep: (timestamp: number) => void): LiveConnection {
  if (target.transport === 'grpc') {
    const config: StreamConfigMsg = { models: MODELS, output_period: periodMs, sample_rate: 16000, encoding: 'PCM_S16LE', results: RESULTS === 'final' ? 'RESULTS_MODE_FINAL' : 'RESULTS_MODE_ALL' };
    const h = openAnalyzeStream(target.client, KEY, config);
    h.call.on('data', (msg: StepResultMsg) => {
      // finals only: provisional results (final false) are measured by bench/provisional
      if (!msg.summary && msg.final === true) onStep(Number(msg.timestamp));
    });
    return { send: (audio) => void h.call.write({ audio }), end: () => h.end(), done: h.status.then((st) => st.code) };
  }
  const q = streamQuery({ models: MODELS, outputPeriodMs: periodMs, sampleRate: 16000, results: RESULTS });
  const ws = new WebSocket(`${target.url.replace(/^http/, 'ws')}/stream?${q}`, { headers: { 'x-api-key': KEY }, perMessageDeflate: false });
  const pending: Buffer[] = [];
  ws.on('open', () => {
    for (const p of pending) ws.send(p);
    pending.length = 0;
  });
  ws.on('message', (d: Buffer) => {
    const m = JSON.parse(d.toString('utf8')) as { type?: string; timestamp?: number; final?: boolean };
    if (m.type === undefined && m.final === true) onStep(m.timestamp!);
  });
  ws.on('error', () => undefined);
  return {
    send: (audio) => (ws.readyState === WebSocket.OPEN ? ws.send(audio) : pending.push(audio)),
    end: () => ws.send(JSON.stringify({ type: 'end' })),
    done: new Promise((resolve) => ws.on('close', (code) => resolve(code === 1000 ? 0 : code))),
  };
}

/**
 * One live stream: sends `pcm` in real time from `startAt` (chunk k of `chunkSamples` when its
 * last sample is due), never waiting for results; records each steady-state step's latency.
 */
function liveStream(target: Target, pcm: Buffer, chunkSamples: number, periodMs: number, lookaheadSteps: number, startAt: number): Promise<StreamRun> {
  const total = pcm.length / 2;
  const chunks = Math.ceil(total / chunkSamples);
  const chunkMs = (chunkSamples / 16000) * 1000;
  const sentAt = new Float64Array(chunks);
  const latencies: number[] = [];
  const measuredSentAt: number[] = [];
  let steps = 0;
  const perSteps = periodMs / 64;
  const conn = connect(target, periodMs, (timestamp) => {
    const now = performance.now();
    steps++;
    const k = timestamp / periodMs;
    const due = ((k + 1) * perSteps + lookaheadSteps) * 1024 + 128;
    if (due > total) return; // flushed at the end of the stream
    const chunk = Math.ceil(due / chunkSamples) - 1;
    // not sent yet: the result needed less than the manifest's lookahead (the speaker map's finals: 13 to 24 steps)
    latencies.push(sentAt[chunk]! > 0 ? now - sentAt[chunk]! : 0);
    measuredSentAt.push(sentAt[chunk]! > 0 ? sentAt[chunk]! : now);
  });
  return new Promise((resolve) => {
    let k = 0;
    const sendNext = (): void => {
      if (k >= chunks) {
        conn.end();
        return;
      }
      sentAt[k] = performance.now();
      conn.send(pcm.subarray(k * chunkSamples * 2, Math.min(total, (k + 1) * chunkSamples) * 2));
      k++;
      const due = startAt + (k + 1) * chunkMs;
      setTimeout(sendNext, Math.max(0, due - performance.now()));
    };
    setTimeout(sendNext, Math.max(0, startAt + chunkMs - performance.now()));
    void conn.done.then((status) => resolve({ latencies, sentAt: measuredSentAt, status, steps }));
  });
}

/** Stream i's audio: the loop from its own offset (golden-ratio spread), unless every stream plays the same. */
function streamAudio(pcm: Buffer, i: number, sync: boolean): Buffer {
  if (sync || i === 0) return pcm;
  const off = 2 * Math.floor(((i * 0.6180339887) % 1) * (pcm.length / 2));
  return Buffer.concat([pcm.subarray(off), pcm.subarray(0, off)]);
}

/** Independent streams start spread over one encoder window (`--spread-ms`: over longer, as callers arriving over time); synchronised ones within one chunk. */
let SPREAD_MS = 1600;
/** Steps sent this long after the last stream began are also reported apart (`afterStartup`): the sustained load without the start-up burst. */
const STARTUP_MS = 5000;

async function runLevel(transport: Transport, address: string, url: string, server: ServerProcess, n: number, pcm: Buffer, chunkSamples: number, lookaheadSteps: number, sync: boolean): Promise<Record<string, unknown>> {
  // gRPC: a few channels (HTTP/2 connections) share the streams, as separate clients would; WebSocket: one connection per stream.
  const channels = Number(process.env['GRPC_BENCH_CHANNELS'] ?? 8);
  const clients = transport === 'grpc' ? Array.from({ length: Math.min(channels, Math.max(1, Math.ceil(n / 25))) }, () => createClient(address)) : [];
  const targetOf = (i: number): Target => (transport === 'grpc' ? { transport, client: clients[i % clients.length]! } : { transport, url });
  const u0 = await server.usage();
  const clientCpu0 = process.cpuUsage();
  const t0 = performance.now();
  const chunkMs = (chunkSamples / 16000) * 1000;
  const startOf = (i: number): number => t0 + 50 + (i / n) * (sync ? chunkMs : SPREAD_MS);
  const runs = await Promise.all(Array.from({ length: n }, (_, i) => liveStream(targetOf(i), streamAudio(pcm, i, sync), chunkSamples, 64, lookaheadSteps, startOf(i))));
  const wall = (performance.now() - t0) / 1000;
  const clientCpu = process.cpuUsage(clientCpu0);
  const u1 = await server.usage();
  const cpu = u1.cpuSec - u0.cpuSec;
  const calls = u1.pool.calls - u0.pool.calls;
  const windows = u1.pool.windows - u0.pool.windows;
  const inference = {
    calls,
    windowsPerCall: Math.round((windows / Math.max(1, calls)) * 10) / 10,
    stepsPerWindow: Math.round(((u1.pool.steps - u0.pool.steps) / Math.max(1, windows)) * 10) / 10,
    // the share of windows handed over while the pool was behind (speech's provisional head then calls every other step)
    behindPercent: Math.round((((u1.pool.windowsBehind ?? 0) - (u0.pool.windowsBehind ?? 0)) / Math.max(1, windows)) * 100),
    workerBusyPercent: Math.round(((u1.pool.busyMs - u0.pool.busyMs) / 1000 / wall) * 100),
    // the pretrained encoders' share (gender's view): windows embedded per second and their worker time
    encoderWindowsPerSec: Math.round(((u1.pool.encoderWindows ?? 0) - (u0.pool.encoderWindows ?? 0)) / wall),
    encoderBusyPercent: Math.round((((u1.pool.encoderBusyMs ?? 0) - (u0.pool.encoderBusyMs ?? 0)) / 1000 / wall) * 100),
    // per graph (`<model>/<file>`): its share of a core, and windows per call (how well it batches)
    graphs: graphUsage(u0.pool.byGraph ?? {}, u1.pool.byGraph ?? {}, wall),
    roundTripMs: u1.inferenceMs.networks,
    encoderRoundTripMs: u1.inferenceMs.encoders,
  };
  for (const c of clients) c.close();
  const all = runs.flatMap((r) => r.latencies);
  // After the start-up: the steps sent once every stream has played STARTUP_MS, when the first windows of all the
  // streams (each one embedded by gender's view at once, as its first voiced run begins) are behind them.
  const steadyFrom = startOf(n) + STARTUP_MS;
  const steady = stats(runs.flatMap((r) => r.latencies.filter((_, i) => r.sentAt[i]! >= steadyFrom)));
  const failed = runs.filter((r) => r.status !== 0).length;
  return { streams: n, ...stats(all), afterStartup: steady, failed, serverCpuPercent: Math.round((cpu / wall) * 100), serverThreadsCpuPercent: threadShares(u0.threadCpuSec ?? {}, u1.threadCpuSec ?? {}, server.pid, wall), clientCpuPercent: Math.round(((clientCpu.user + clientCpu.system) / 1e6 / wall) * 100), inference, eventLoopDelayMs: u1.loopMs, workerMessages: u1.postMessages, gc: u1.gcMs, load1: os.loadavg()[0]!.toFixed(2) };
}

/**
 * The server's CPU by thread between two reports, % of a core: its main thread, then the other
 * threads busier than 3 % (the inference workers first), then the rest together.
 */
function threadShares(before: Record<string, number>, after: Record<string, number>, pid: number, wall: number): { main: number; busiest: number[]; rest: number } | undefined {
  const shares = Object.entries(after).map(([tid, s]) => [tid, Math.round(((s - (before[tid] ?? 0)) / wall) * 100)] as const);
  if (shares.length === 0) return undefined;
  const others = shares.filter(([tid]) => tid !== String(pid)).map(([, pct]) => pct).sort((a, b) => b - a);
  return { main: shares.find(([tid]) => tid === String(pid))?.[1] ?? 0, busiest: others.filter((p) => p > 3), rest: others.filter((p) => p <= 3).reduce((a, b) => a + b, 0) };
}

/** Each graph's worker time between two reports as a share of one core, its windows per second and per call. */
function graphUsage(
  before: Record<string, { busyMs: number; calls: number; windows: number }>,
  after: Record<string, { busyMs: number; calls: number; windows: number }>,
  wall: number,
): Record<string, { busyPercent: number; windowsPerSec: number; windowsPerCall: number }> {
  const out: Record<string, { busyPercent: number; windowsPerSec: number; windowsPerCall: number }> = {};
  for (const [g, a] of Object.entries(after)) {
    const b = before[g] ?? { busyMs: 0, calls: 0, windows: 0 };
    const calls = a.calls - b.calls;
    if (calls === 0) continue;
    out[g] = {
      busyPercent: Math.round(((a.busyMs - b.busyMs) / 1000 / wall) * 1000) / 10,
      windowsPerSec: Math.round((a.windows - b.windows) / wall),
      windowsPerCall: Math.round(((a.windows - b.windows) / calls) * 10) / 10,
    };
  }
  return out;
}

function pcmOf(samples: Float32Array, seconds: number): Buffer {
  const n = Math.round(seconds * 16000);
  const out = Buffer.alloc(n * 2);
  for (let i = 0; i < n; i++) {
    const v = samples[i % samples.length]!;
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32768))), i * 2);
  }
  return out;
}

interface ModeResult {
  mode: Mode;
  transport: Transport;
  single: LatencyStats & { status: number };
  concurrent: Record<string, unknown>[];
  sustainedStreamsP99Under100ms: number;
}

async function benchMode(mode: Mode, transport: Transport, args: Args, samples: Float32Array): Promise<ModeResult & { lookaheadSteps: number; lookaheadMs: number }> {
  const { proc, port, url } = await ServerProcess.start(mode);
  const address = `127.0.0.1:${port}`;
  const client = createClient(address);
  const models = await listModels(client, KEY);
  const lookaheadSteps = Math.max(...models.models.filter((m) => MODELS.includes(m.name)).map((m) => m.right_context_steps));
  const lookaheadMs = Math.max(...models.models.filter((m) => MODELS.includes(m.name)).map((m) => m.stream_lookahead_ms));
  log(`[${mode} ${transport}] server on ${address}; models ${MODELS.join(', ')}: lookahead ${lookaheadSteps} steps (${lookaheadMs} ms)`);

  // Warm-up (sessions, JIT).
  const target: Target = transport === 'grpc' ? { transport, client } : { transport, url };
  await liveStream(target, pcmOf(samples, 3), 1024, 64, lookaheadSteps, performance.now());

  log(`[${mode} ${transport}] one stream, ${args.singleSeconds} s, 20 ms chunks`);
  const single = await liveStream(target, pcmOf(samples, args.singleSeconds), 320, 64, lookaheadSteps, performance.now());
  const singleStats = { ...stats(single.latencies), status: single.status };
  log(`[${mode} ${transport}] one stream: ${JSON.stringify(singleStats)}`);

  const levels: Record<string, unknown>[] = [];
  const pcm = pcmOf(samples, args.seconds);
  let sustained = 0;
  for (const n of args.levels) {
    log(`[${mode} ${transport}] ${n} concurrent streams, ${args.seconds} s each, 64 ms chunks`);
    const r = await runLevel(transport, address, url, proc, n, pcm, 1024, lookaheadSteps, args.sync);
    log(JSON.stringify(r));
    levels.push(r);
    const p99 = r['p99'] as number;
    if (p99 < TARGET_P99_MS && r['failed'] === 0) sustained = n;
    if (!(p99 < 3 * TARGET_P99_MS) || (r['failed'] as number) > 0) break;
  }
  client.close();
  await proc.stop();
  return { mode, transport, single: singleStats, concurrent: levels, sustainedStreamsP99Under100ms: sustained, lookaheadSteps, lookaheadMs };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  fs.mkdirSync(OUT, { recursive: true });
  const { info, samples } = await decodeAll({ path: path.join(ROOT, 'test', 'fixtures', 'demo.flac') });
  if (info.sampleRate !== 16000 || info.channels !== 1) throw new Error('the demo fixture is expected to be 16 kHz mono');
  const loadStart = os.loadavg().map((x) => x.toFixed(2)).join(' / ');
  log(`load ${loadStart}`);

  const runs: (ModeResult & { lookaheadMs: number })[] = [];
  for (const mode of args.modes) for (const transport of args.transports) runs.push(await benchMode(mode, transport, args, samples));
  const lookaheadMs = runs[0]!.lookaheadMs;

  // Server CPU per stream of the reference over ours, at each stream count both completed without failures.
  const cpuRatio: Record<string, number> = {};
  const ours = runs.find((r) => r.mode === 'stateful' && r.transport === 'grpc');
  const ref = runs.find((r) => r.mode === 'windowed' && r.transport === 'grpc');
  if (ours && ref) {
    for (const l of ours.concurrent) {
      const r = ref.concurrent.find((x) => x['streams'] === l['streams']);
      if (r && l['failed'] === 0 && r['failed'] === 0) {
        cpuRatio[String(l['streams'])] = Math.round(((r['serverCpuPercent'] as number) / Math.max(1, l['serverCpuPercent'] as number)) * 100) / 100;
      }
    }
  }

  const result = {
    measuredAt: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, loadAtStart: loadStart, node: process.version },
    models: MODELS,
    lookaheadMs,
    startSpreadMs: args.sync ? 0 : SPREAD_MS,
    modes: runs.map(({ mode, transport, single, concurrent, sustainedStreamsP99Under100ms }) => ({ mode, transport, single, concurrent, sustainedStreamsP99Under100ms })),
    windowedOverStatefulServerCpu: cpuRatio,
  };
  fs.writeFileSync(path.join(OUT, 'grpc.json'), JSON.stringify(result, null, 2) + '\n');

  const lines = [
    `live streaming (gRPC and WebSocket), ${result.machine.cpus} cores (${result.machine.model}), load at start ${loadStart}, ${process.version}`,
    `models ${MODELS.join(' + ')}, output_period 64 ms, 16 kHz s16le; lookahead ${lookaheadMs} ms (not included below); the streams of a level start within ${args.sync ? 'one chunk (--sync)' : `${SPREAD_MS} ms`}`,
    '',
    '| transport | models run as | streams | chunk | steps measured | p50 ms | p90 ms | p99 ms | max ms | p99 after start-up ms | server CPU % | failed |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of runs) {
    const s = r.single;
    lines.push(`| ${r.transport} | ${r.mode} | 1 | 20 ms | ${s.n} | ${s.p50} | ${s.p90} | ${s.p99} | ${s.max} | | | ${s.status === 0 ? 0 : 1} |`);
    for (const l of r.concurrent) {
      lines.push(`| ${r.transport} | ${r.mode} | ${l['streams']} | 64 ms | ${l['n']} | ${l['p50']} | ${l['p90']} | ${l['p99']} | ${l['max']} | ${(l['afterStartup'] as LatencyStats).p99} | ${l['serverCpuPercent']} | ${l['failed']} |`);
    }
  }
  lines.push('');
  for (const r of runs) lines.push(`${r.transport} ${r.mode}: largest tested number of concurrent real-time streams with p99 < ${TARGET_P99_MS} ms: ${r.sustainedStreamsP99Under100ms}`);
  if (Object.keys(cpuRatio).length > 0) {
    lines.push(`server CPU, windowed / stateful, same streams: ${Object.entries(cpuRatio).map(([n, x]) => `${n} streams ${x}x`).join(', ')}`);
  }
  process.stdout.write(lines.join('\n') + '\n');
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
