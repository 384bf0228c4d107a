/**
 * Inference/pipeline settings from the environment, with defaults. Explicit options passed to
 * the APIs always win over these.
 *
 *   AURIS_MODELS_DIR          models directory (default: <package root>/models)
 *   AURIS_INFERENCE_THREADS   inference worker threads (default: os.availableParallelism())
 *   AURIS_ENCODER_THREADS     onnxruntime threads of each pretrained encoder's session (default 1)
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

function envInt(name: string): number | undefined {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
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

export function defaultWindowSteps(): number {
  return envInt('AURIS_WINDOW_STEPS') ?? 1024;
}
