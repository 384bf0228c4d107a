/**
 * One benchmark measurement, run in its own process by bench/measure.ts:
 *   node dist/bench/child.js <task> <json args>
 * Prints `BENCH_RESULT {...}` with the task's numbers and process.resourceUsage().
 */
import { reportFromChild, Section } from './measure';
import { readWavMono16 } from './wav';
import { SileroVad } from './silero';

type Args = Record<string, unknown>;

const tasks: Record<string, (args: Args) => Promise<Record<string, unknown>>> = {
  /** Node + onnxruntime loaded, nothing run: the RSS floor of the other tasks. */
  async baseline() {
    await import('onnxruntime-node');
    return {};
  },

  /** Silero VAD over a 16 kHz mono WAV, one intra-op thread; decode excluded from the timing. */
  async silero(args) {
    const { samples, sampleRate } = readWavMono16(String(args.file));
    if (sampleRate !== 16000) throw new Error(`silero task needs 16 kHz audio, got ${sampleRate}`);
    const vad = await SileroVad.create({ threads: 1 });
    const sec = new Section();
    const probs = await sec.time(() => vad.probabilities(samples));
    let speech = 0;
    for (const p of probs) if (p >= 0.5) speech++;
    return {
      audioSec: samples.length / 16000,
      windows: probs.length,
      inferWallSec: sec.wallSec,
      inferCpuSec: sec.cpuSec,
      speechWindowFraction: speech / probs.length,
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
