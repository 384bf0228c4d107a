/**
 * `npm run bench:responsiveness`: how free the event loop stays and how much memory grows while
 * the heavy work runs elsewhere (numbers only, never pass/fail; the tests check only that timers
 * fire at all while the work is pending):
 *  - FileFrontend reading a 10-minute stereo 44.1 kHz WAV in 30 s chunks: longest gap between
 *    5 ms timer ticks, ticks seen against ticks due, and RSS growth (10 min of stereo PCM is
 *    100 MB as s16, 200 MB as float: a bounded reader stays far below);
 *  - the inference pool (1 worker) running a large placeholder model: longest timer gap against
 *    the time one run takes (had inference run on the main thread, a gap would be a whole run);
 *  - the speaker map's clusterings (the shipped `speakers` model's parameters, synthetic windows of
 *    ten voices): a file's hour of windows, 2,000 windows too unlike to form segments (the
 *    agglomeration's worst case) and a stream's re-clustering of its last 256, each timed
 *    on the main thread (the stall every other job and stream saw before) and on the clustering
 *    thread (src/speakers/clustering-thread.ts), with the longest timer gap meanwhile.
 * Prints a table and writes bench/out/responsiveness.json.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FileFrontend } from '../../src/audio';
import { FLOATS_PER_STEP, InferencePool, ModelRegistry, writePlaceholderModels } from '../../src/inference';
import { seededRandom } from '../../src/inference/placeholder';
import { writeLongWav } from '../../test/audio/helpers';
import { normalise, type EmbeddedWindow } from '../../src/speakers/clustering';
import { ClusteringThread } from '../../src/speakers/clustering-thread';
import { packWindows } from '../../src/speakers/clustering-protocol';
import { speakersOfFile } from '../../src/speakers/file-map';
import { freeClusters } from '../../src/speakers/free-recluster';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const OUT = path.join(ROOT, 'bench', 'out');
const TICK_MS = 5;

/** Samples the event loop with a TICK_MS interval and the RSS on each tick. */
class LoopMonitor {
  private last = performance.now();
  private readonly started = performance.now();
  private readonly rss0 = process.memoryUsage().rss;
  private rssMax = this.rss0;
  maxGapMs = 0;
  ticks = 0;
  private readonly timer = setInterval(() => {
    const now = performance.now();
    this.maxGapMs = Math.max(this.maxGapMs, now - this.last);
    this.last = now;
    this.ticks++;
    this.rssMax = Math.max(this.rssMax, process.memoryUsage().rss);
  }, TICK_MS);

  stop(): { maxGapMs: number; ticks: number; ticksDue: number; elapsedMs: number; rssGrowthMiB: number } {
    clearInterval(this.timer);
    const elapsedMs = performance.now() - this.started;
    return {
      maxGapMs: round(this.maxGapMs),
      ticks: this.ticks,
      ticksDue: Math.floor(elapsedMs / TICK_MS),
      elapsedMs: round(elapsedMs),
      rssGrowthMiB: round((this.rssMax - this.rss0) / 2 ** 20),
    };
  }
}

const round = (x: number): number => Math.round(x * 10) / 10;

async function longFile(dir: string): Promise<Record<string, unknown>> {
  const rate = 44100, seconds = 600;
  const file = path.join(dir, 'ten-minutes.wav');
  writeLongWav(file, seconds, rate, 2);
  const monitor = new LoopMonitor();
  const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 30 });
  let reads = 0;
  try {
    while (await fa.read()) reads++;
  } finally {
    fa.close();
  }
  const m = monitor.stop();
  return { what: 'FileFrontend, 10 min stereo 44.1 kHz WAV', reads, ...m, xRealTime: round((seconds * 1000) / m.elapsedMs) };
}

async function pool(dir: string): Promise<Record<string, unknown>> {
  writePlaceholderModels(dir, [{ name: 'heavy', rawKeys: ['a', 'b'], hidden: 256 }]);
  const reg = ModelRegistry.loadSync({ modelsDir: dir });
  const p = new InferencePool({ size: 1 });
  try {
    const heavy = reg.get('heavy');
    const steps = 24000;
    const r = seededRandom(1);
    const input = Float32Array.from({ length: steps * FLOATS_PER_STEP }, () => r() * 6 - 4);
    await p.run(heavy, input.slice(), steps); // warm-up: session creation
    const busy0 = p.stats.busyMs;
    const monitor = new LoopMonitor();
    let runs = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 2000 || runs < 3) {
      await p.run(heavy, input.slice(), steps);
      runs++;
    }
    const m = monitor.stop();
    return { what: 'InferencePool (1 worker), placeholder model, 24000 steps per run', runs, runMs: round((p.stats.busyMs - busy0) / runs), ...m };
  } finally {
    await p.close();
  }
}

/**
 * `n` unit windows of ten voices taking turns of 2-8 s (hop 6 steps = 384 ms), around random directions. With
 * `spread` 0.5 a voice's successive windows are at cosine ~0.73, above the segment threshold (0.7) as recorded
 * voices' mostly are; with 1 at ~0.5, every window its own segment: the agglomeration's worst case (its cost grew
 * as n^1.8 until 2026-11-29; docs/benchmarks.md).
 */
function tenVoices(n: number, dim: number, spread = 0.5): EmbeddedWindow[] {
  const normal = seededRandom(3); // mean 0, variance 1/3, within (-2, 2)
  const r = (): number => Math.min(0.999999, Math.max(0, normal() / 4 + 0.5)); // in [0, 1)
  const voices = Array.from({ length: 10 }, () => Float64Array.from({ length: dim }, normal));
  const out: EmbeddedWindow[] = [];
  let voice = 0;
  while (out.length < n) {
    const turn = 5 + Math.floor(r() * 16);
    for (let i = 0; i < turn && out.length < n; i++) {
      out.push({ window: out.length, embedding: normalise(voices[voice]!.map((v) => v + normal() * spread)) });
    }
    voice = (voice + 1 + Math.floor(r() * 9)) % 10;
  }
  return out;
}

async function clustering(): Promise<Record<string, unknown>[]> {
  const map = ModelRegistry.loadSync({}).get('speakers').speakerMap!;
  const hop = map.params.hopSteps;
  const file = tenVoices(Math.round(3600 / ((hop * 64) / 1000)), map.encoder.dim); // an hour of speech
  const steps = file.length * hop + map.params.windowSteps;
  const speech = new Uint8Array(steps).fill(1);
  const stream = file.slice(0, map.recluster.history);
  const unlike = tenVoices(2000, map.encoder.dim, 1);
  const unlikeSteps = unlike.length * hop + map.params.windowSteps;
  const thread = new ClusteringThread('bench');
  try {
    const rows: Record<string, unknown>[] = [];
    for (const [what, here, there] of [
      [`file: an hour of windows (${file.length})`, () => speakersOfFile(map, file, steps, speech), () => thread.file(map, packWindows(file), steps, speech)],
      [
        `file: ${unlike.length} windows, each its own segment`,
        () => speakersOfFile(map, unlike, unlikeSteps, speech),
        () => thread.file(map, packWindows(unlike), unlikeSteps, speech),
      ],
      [`stream: re-clustering its last ${stream.length} windows`, () => freeClusters(stream, map, 10), () => thread.free(map, 10, stream)],
    ] as const) {
      let t = performance.now();
      here();
      const mainThreadMs = round(performance.now() - t);
      await there(); // the thread started and the map sent
      const monitor = new LoopMonitor();
      t = performance.now();
      await there();
      const threadMs = round(performance.now() - t);
      rows.push({ what: `speaker clustering, ${what}`, mainThreadMs, threadMs, ...monitor.stop() });
    }
    return rows;
  } finally {
    await thread.close();
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-bench-resp-'));
  try {
    const rows = [await longFile(dir), await pool(dir), ...(await clustering())];
    for (const r of rows) console.log(JSON.stringify(r));
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(path.join(OUT, 'responsiveness.json'), JSON.stringify({ machine: { cpus: os.cpus().length, load: os.loadavg() }, rows }, null, 2));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

void main();
