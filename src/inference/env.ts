/**
 * Inference/pipeline settings from the environment, with defaults. Explicit options passed to
 * the APIs always win over these.
 *
 *   AURIS_MODELS_DIR          models directory (default: <package root>/models)
 *   AURIS_INFERENCE_THREADS   inference worker threads (default: os.availableParallelism(); in the stream engine its
 *                             network workers, default the cores less its encoder lanes)
 *   AURIS_ENCODER_THREADS     onnxruntime threads of each pretrained encoder's session (default 1)
 *   AURIS_STREAM_ENCODER_LANES  the live-stream engine's workers that run the pretrained encoders first (default: a
 *                             quarter of the cores, at least 1; 0: every worker runs everything)
 *   AURIS_WINDOW_STEPS        model window for file processing, 64 ms steps (default 1024 = 65.5 s)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** The directory holding auris' package.json (walks up from this file: works from src/ and dist/src/). */
export function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj)) {
      try {
        if ((JSON.parse(fs.readFileSync(pj, 'utf8')) as { name?: string }).name === 'auris') return dir;
      } catch {
        /* keep walking */
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return path.resolve(__dirname, '..', '..');
    dir = up;
  }
}

/** An integer setting of at least `min` (default 1), undefined when unset. */
function envInt(name: string, min = 1): number | undefined {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer of at least ${min}, got ${JSON.stringify(v)}`);
  return n;
}

export function defaultModelsDir(): string {
  const env = process.env['AURIS_MODELS_DIR'];
  return env && env.trim() !== '' ? path.resolve(env) : path.join(packageRoot(), 'models');
}

export function defaultInferenceThreads(): number {
  return envInt('AURIS_INFERENCE_THREADS') ?? Math.max(1, os.availableParallelism());
}

/**
 * Threads of each pretrained encoder's session. 1 (the default): the workers are the parallelism.
 * Where memory is tighter than CPU, one worker whose encoders use every core holds one copy of each
 * encoder instead of one per worker (docs/deploy.md, Memory).
 */
export function defaultEncoderThreads(): number {
  return envInt('AURIS_ENCODER_THREADS') ?? 1;
}

/**
 * The live-stream engine's workers: `lanes` that run the pretrained encoders' windows first (and the networks' calls
 * when no window waits) and `networks` that never run an encoder, so a stream's next step never waits behind a
 * 10-40 ms encoder call (docs/streaming.md, Benchmark, "Encoder lanes"). Together one per core unless AURIS_INFERENCE_THREADS (or
 * `threads`) sets the network workers; `encoderLanes` wins over the environment.
 */
export function streamWorkers(threads?: number, encoderLanes?: number): { size: number; encoderLanes: number } {
  const cores = Math.max(1, os.availableParallelism());
  const lanes = encoderLanes ?? envInt('AURIS_STREAM_ENCODER_LANES', 0) ?? Math.max(1, Math.floor(cores / 4));
  const size = threads ?? envInt('AURIS_INFERENCE_THREADS') ?? Math.max(1, cores - lanes);
  return { size, encoderLanes: lanes };
}

export function defaultWindowSteps(): number {
  return envInt('AURIS_WINDOW_STEPS') ?? 1024;
}
