/**
 * One benchmark measurement, run in its own process by bench/measure.ts:
 *   node dist/bench/child.js <task> <json args>
 * Prints `BENCH_RESULT {...}` with the task's numbers and process.resourceUsage().
 */
import * as fs from 'node:fs';
import { FileFrontend } from '../src/audio';
import type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from '../src/audio/types';
import { reportFromChild, Section } from './measure';
import { wavLayout } from './wav';
import { SileroVad, SILERO_WINDOW } from './silero';

const FLOATS_PER_STEP = 4 * 64;

/** FileFrontend.open of src/audio (the addon loads on the first open). */
function openFile(source: AudioSource, options: OpenOptions): Promise<FileFrontend> {
  return FileFrontend.open(source, options);
}

/** Features of every channel of a file, read through the front end (steps, levels, features). */
async function readAllFeatures(file: string): Promise<{ info: AudioInfo; channels: { steps: number; features: Float32Array }[] }> {
  const fa = await openFile({ path: file }, {});
  const parts: FeatureChunk[][] = [];
  try {
    for (;;) {
      const chunks = await fa.read();
      if (!chunks) break;
      for (const c of chunks) (parts[c.channel] ??= []).push({ ...c, features: c.features.slice() });
    }
  } finally {
    await fa.close();
  }
  const channels = parts.map((list) => {
    const steps = list.reduce((n, c) => n + c.steps, 0);
    const features = new Float32Array(steps * FLOATS_PER_STEP);
    for (const c of list) features.set(c.features, c.startStep * FLOATS_PER_STEP);
    return { steps, features };
  });
  return { info: fa.info, channels };
}

type Args = Record<string, unknown>;

const tasks: Record<string, (args: Args) => Promise<Record<string, unknown>>> = {
  /** Node + onnxruntime loaded, nothing run: the RSS floor of the other tasks. */
  async baseline() {
    await import('onnxruntime-node');
    return {};
  },

  /**
   * The native front end alone: FileFrontend read loop (decode + resample + levels + log-mel)
   * over every channel, with the loop's own per-stage wall times (FileFrontend.stats:
   * decode / resample / features) when the addon keeps them.
   */
  async frontend(args) {
    const sec = new Section();
    sec.start();
    const fa = await openFile({ path: String(args.file) }, {});
    let steps = 0;
    let chunks = 0;
    try {
      for (;;) {
        const out = await fa.read();
        if (!out) break;
        for (const c of out) {
          steps += c.steps;
          chunks++;
        }
      }
    } finally {
      await fa.close();
    }
    sec.stop();
    const result: Record<string, unknown> = {
      audioSec: fa.info.durationSec,
      channels: fa.info.channels,
      steps,
      chunks,
      inferWallSec: sec.wallSec,
      inferCpuSec: sec.cpuSec,
    };
    // The read loop's own per-stage wall times.
    result.loopStages = fa.stats;
    return result;
  },

  /**
   * Our models through the service's inference engine with ONE worker thread (pool size 1,
   * one intra-op thread): features are read first (not timed), then every listed model runs
   * over every channel with the engine's windowed runners; the timed section is inference only.
   */
  async models(args) {
    const names = args.models as string[];
    const { info, channels } = await readAllFeatures(String(args.file));
    const { InferenceEngine } = await import('../src/inference');
    const engine = await InferenceEngine.create({ size: 1, preload: names });
    const sec = new Section();
    let outSteps = 0;
    try {
      // warm-up: one short window per model, so session creation is not timed
      for (const n of names) await engine.infer(n, new Float32Array(FLOATS_PER_STEP * 8), 8);
      const before = engine.pool.stats;
      sec.start();
      // Fed like analyzeFile feeds them: 30 s chunks (the decoder's default), every model's
      // runner of every channel pushed together, at most 2 chunks in flight.
      const chunkSteps = Math.round(30 / 0.064);
      const runners = channels.map(() =>
        names.map((n) =>
          engine.runner(n, (_start, _probs, steps) => {
            outSteps += steps;
          }),
        ),
      );
      const inFlight: Promise<unknown>[] = [];
      const maxSteps = Math.max(...channels.map((c) => c.steps));
      for (let at = 0; at < maxSteps; at += chunkSteps) {
        const pushes: Promise<void>[] = [];
        channels.forEach((ch, c) => {
          const n = Math.min(chunkSteps, ch.steps - at);
          if (n <= 0) return;
          const feats = ch.features.subarray(at * FLOATS_PER_STEP, (at + n) * FLOATS_PER_STEP);
          for (const r of runners[c]) pushes.push(r.push(feats, n));
        });
        inFlight.push(Promise.all(pushes));
        if (inFlight.length > 2) await inFlight.shift();
      }
      await Promise.all(inFlight);
      await Promise.all(runners.flat().map((r) => r.end()));
      sec.stop();
      const after = engine.pool.stats;
      return {
        audioSec: info.durationSec,
        models: names,
        outSteps,
        inferWallSec: sec.wallSec,
        inferCpuSec: sec.cpuSec,
        poolCalls: after.calls - before.calls,
        poolWindows: after.windows - before.windows,
        poolSteps: after.steps - before.steps,
        sessionRunSec: (after.busyMs - before.busyMs) / 1000,
        windowSteps: engine.windowSteps,
      };
    } finally {
      await engine.close();
    }
  },

  /**
   * End to end: analyzeFile (decode -> front end -> inference pool -> post-processing) at
   * output_period 64 with summary and transitions, plus serialising the results envelope.
   * The inference engine (worker pool, AURIS_INFERENCE_THREADS) is started before timing,
   * as in a running service; its start-up is reported separately.
   */
  async pipeline(args) {
    const names = args.models as string[];
    const { analyzeFile } = await import('../src/pipeline');
    const { buildEnvelope } = await import('../src/analysis/postprocess');
    const { sharedEngine, closeSharedEngines } = await import('../src/inference');
    const t0 = process.hrtime.bigint();
    const engine = await sharedEngine({ preload: names });
    const engineStartSec = Number(process.hrtime.bigint() - t0) / 1e9;
    const sec = new Section();
    try {
      sec.start();
      const res = await analyzeFile(
        { path: String(args.file) },
        { models: names, outputPeriodMs: 64, includeSummary: true, includeTransitions: true },
        { engine },
      );
      const json = JSON.stringify(buildEnvelope('bench', res.channels));
      sec.stop();
      return {
        audioSec: res.info.durationSec,
        channels: Object.keys(res.channels).length,
        steps: res.steps,
        resultMiB: +(Buffer.byteLength(json) / 2 ** 20).toFixed(2),
        inferWallSec: sec.wallSec,
        inferCpuSec: sec.cpuSec,
        engineStartSec,
        poolSize: engine.pool.size ?? null,
        // the pretrained encoders' share (gender 2.0's speaker encoder, docs/features.md)
        encoderWindows: engine.pool.stats.encoderWindows,
        encoderSec: engine.pool.stats.encoderBusyMs / 1000,
        speakersFound: Object.keys(res.channels['0']?.summary?.['speakers'] ?? {}).filter((k) => k.startsWith('speaker_')).length,
      };
    } finally {
      await closeSharedEngines();
    }
  },

  /**
   * Silero VAD over a 16 kHz mono 16-bit WAV, one intra-op thread, streaming: the file is read
   * in 1 MiB blocks and fed window by window (decode is trivial and included).
   */
  async silero(args) {
    const file = String(args.file);
    const { dataOffset, dataBytes, sampleRate } = wavLayout(file);
    if (sampleRate !== 16000) throw new Error(`silero task needs 16 kHz audio, got ${sampleRate}`);
    const vad = await SileroVad.create({ threads: 1 });
    const sec = new Section();
    let windows = 0;
    let speech = 0;
    sec.start();
    const fd = fs.openSync(file, 'r');
    try {
      const block = Buffer.alloc(1 << 20); // a multiple of 1024 bytes = 512 samples
      const win = new Float32Array(SILERO_WINDOW);
      for (let off = 0; off < dataBytes; off += block.length) {
        const n = fs.readSync(fd, block, 0, Math.min(block.length, dataBytes - off), dataOffset + off);
        const samples = n >> 1;
        for (let w = 0; w < samples; w += SILERO_WINDOW) {
          win.fill(0);
          const m = Math.min(SILERO_WINDOW, samples - w);
          for (let i = 0; i < m; i++) win[i] = block.readInt16LE(2 * (w + i)) / 32768;
          if ((await vad.window(win)) >= 0.5) speech++;
          windows++;
        }
      }
    } finally {
      fs.closeSync(fd);
    }
    sec.stop();
    return {
      audioSec: dataBytes / 2 / 16000,
      windows,
      inferWallSec: sec.wallSec,
      inferCpuSec: sec.cpuSec,
      speechWindowFraction: speech / windows,
    };
  },
};

async function main(): Promise<void> {
  const [task, json] = process.argv.slice(2);
  const f = tasks[task];
  if (!f) throw new Error(`unknown bench task "${task}" (tasks: ${Object.keys(tasks).join(', ')})`);
  const data = await f(json ? (JSON.parse(json) as Args) : {});
  reportFromChild(data);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
