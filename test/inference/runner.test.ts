import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FLOATS_PER_STEP, InferenceEngine, InferFn, RunnerModel, WindowedRunner, writePlaceholderModels } from '../../src/inference';
import { seededRandom } from '../../src/inference/placeholder';

const F = FLOATS_PER_STEP;

function randomFeatures(steps: number, seed: number): Float32Array {
  const r = seededRandom(seed);
  return Float32Array.from({ length: steps * F }, () => r() * 6 - 4);
}

/**
 * A JS stand-in for a model with context [left, right]: out[s][c] depends on the per-step
 * feature means of steps s-left..s+right, zero outside what it is given (like the ONNX models).
 */
function fakeModel(left: number, right: number, C: number): (x: Float32Array, steps: number) => Float32Array {
  return (x, steps) => {
    const mean = new Float64Array(steps);
    for (let s = 0; s < steps; s++) {
      let a = 0;
      for (let i = 0; i < F; i++) a += x[s * F + i]! * (1 + (i % 7));
      mean[s] = a / F;
    }
    const out = new Float32Array(steps * C);
    for (let s = 0; s < steps; s++) {
      for (let c = 0; c < C; c++) {
        let v = 0;
        for (let d = -left; d <= right; d++) {
          const t = s + d;
          if (t >= 0 && t < steps) v += Math.sin(mean[t]! * (c + 1) + d);
        }
        out[s * C + c] = v;
      }
    }
    return out;
  };
}

/** Feeds `features` to a runner in chunks of pseudo-random sizes; collects its output in order. */
async function runWindowed(
  model: RunnerModel,
  infer: InferFn,
  features: Float32Array,
  opts: { windowSteps: number; minWindowSteps?: number; maxChunk: number; seed: number },
): Promise<{ out: Float32Array; maxBuffered: number; calls: number }> {
  const steps = features.length / F;
  const C = model.rawKeys.length;
  const out = new Float32Array(steps * C).fill(NaN);
  let expectNext = 0;
  let calls = 0;
  const runner = new WindowedRunner({
    model,
    infer: (x, n) => {
      calls++;
      return infer(x, n);
    },
    onOutput: (start, probs, n) => {
      assert.equal(start, expectNext, 'outputs arrive in order, without gaps');
      assert.equal(probs.length, n * C);
      out.set(probs, start * C);
      expectNext = start + n;
    },
    windowSteps: opts.windowSteps,
    ...(opts.minWindowSteps !== undefined ? { minWindowSteps: opts.minWindowSteps } : {}),
  });
  const r = seededRandom(opts.seed);
  let maxBuffered = 0;
  for (let s = 0; s < steps; ) {
    const n = Math.min(steps - s, 1 + Math.floor(Math.abs(r() * 1.7) * opts.maxChunk) % opts.maxChunk);
    await runner.push(features.subarray(s * F, (s + n) * F), n);
    maxBuffered = Math.max(maxBuffered, runner.bufferedSteps);
    s += n;
  }
  await runner.end();
  assert.equal(runner.emitted, steps);
  return { out, maxBuffered, calls };
}

describe('windowed runner (JS model)', () => {
  const model: RunnerModel = { name: 'fake', rawKeys: ['a', 'b', 'c'], context: { leftSteps: 5, rightSteps: 3 } };
  const fake = fakeModel(5, 3, 3);
  const infer: InferFn = async (x, n) => fake(x, n);
  const steps = 437;
  const features = randomFeatures(steps, 1);
  const whole = fake(features.slice(), steps);

  for (const windowSteps of [1, 2, 9, 64, 436, 437, 1024]) {
    for (const streaming of [false, true]) {
      it(`window ${windowSteps}${streaming ? ', streaming' : ''}: output equals a whole-signal run, memory bounded`, async () => {
        const maxChunk = 40;
        const { out, maxBuffered } = await runWindowed(model, infer, features, {
          windowSteps,
          ...(streaming ? { minWindowSteps: 1 } : {}),
          maxChunk,
          seed: windowSteps,
        });
        assert.deepEqual(out, whole);
        assert.ok(maxBuffered <= windowSteps + 5 + 3 + maxChunk, `buffered ${maxBuffered}`);
      });
    }
  }

  it('streaming emits a step as soon as its right context has arrived', async () => {
    let emitted = 0;
    const runner = new WindowedRunner({ model, infer, onOutput: (s, _p, n) => (emitted = s + n), windowSteps: 16, minWindowSteps: 1 });
    for (let s = 0; s < 30; s++) {
      await runner.push(features.subarray(s * F, (s + 1) * F), 1);
      assert.equal(emitted, Math.max(0, s + 1 - 3));
    }
    await runner.end();
    assert.equal(emitted, 30);
  });

  it('file mode waits for full windows', async () => {
    let calls = 0;
    const runner = new WindowedRunner({
      model,
      infer: async (x, n) => (calls++, fake(x, n)),
      onOutput: () => undefined,
      windowSteps: 100,
    });
    await runner.push(features.subarray(0, 102 * F), 102);
    assert.equal(calls, 0); // 102 - right 3 < 100
    await runner.push(features.subarray(102 * F, 103 * F), 1);
    assert.equal(calls, 1);
    await runner.end();
    assert.equal(calls, 2);
  });

  it('a failing model call rejects push/end and stops output', async () => {
    let n = 0;
    const runner = new WindowedRunner({
      model,
      infer: async (x, s) => {
        if (++n === 2) throw new Error('boom');
        return fake(x, s);
      },
      onOutput: () => undefined,
      windowSteps: 10,
    });
    await runner.push(features.subarray(0, 13 * F), 13);
    await assert.rejects(runner.push(features.subarray(13 * F, 40 * F), 27), /boom/);
    await assert.rejects(runner.push(features.subarray(40 * F, 41 * F), 1), /boom/);
    await assert.rejects(runner.end(), /boom/);
  });

  it('rejects malformed input', async () => {
    const runner = new WindowedRunner({ model, infer, onOutput: () => undefined });
    await assert.rejects(runner.push(new Float32Array(F + 1), 1), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => new WindowedRunner({ model, infer, onOutput: () => undefined, windowSteps: 8, minWindowSteps: 9 }));
  });
});

describe('windowed runner (placeholder ONNX model in worker threads)', () => {
  let tmp: string;
  let engine: InferenceEngine;
  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-runner-'));
    writePlaceholderModels(tmp, [
      { name: 'speech' },
      { name: 'gender', pads: [[0, 4], [6, 1]] }, // asymmetric: left 6, right 5
    ]);
    engine = await InferenceEngine.create({ modelsDir: tmp, size: 2 });
  });
  after(async () => {
    await engine.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  const steps = 300;
  for (const name of ['speech', 'gender']) {
    for (const [windowSteps, minWindowSteps] of [
      [1024, undefined],
      [64, undefined],
      [17, undefined],
      [8, 1],
    ] as const) {
      it(`${name}: window ${windowSteps}${minWindowSteps ? ' streaming' : ''} equals the whole-array run`, async () => {
        const model = engine.model(name);
        const features = randomFeatures(steps, 7);
        const whole = await engine.infer(model, features.slice(), steps);
        const { out } = await runWindowed(model, (x, n) => engine.infer(model, x, n), features, {
          windowSteps,
          ...(minWindowSteps ? { minWindowSteps } : {}),
          maxChunk: 50,
          seed: windowSteps,
        });
        let maxDiff = 0;
        for (let i = 0; i < out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out[i]! - whole[i]!));
        // Same maths; ORT's conv/GEMM kernels round differently for different input lengths
        // (measured: <= 2.1e-7, 1-2 float32 ulps). The windowing itself is exact: see the JS-model
        // tests above, and the single-window case here.
        assert.ok(maxDiff <= 1e-6, `max difference ${maxDiff}`);
        if (windowSteps >= steps) assert.deepEqual(out, whole);
      });
    }
  }

  it('probabilities are per-step softmax outputs', async () => {
    const out = await engine.infer('speech', randomFeatures(20, 3), 20);
    assert.equal(out.length, 60);
    for (let s = 0; s < 20; s++) assert.ok(Math.abs(out[s * 3]! + out[s * 3 + 1]! + out[s * 3 + 2]! - 1) < 1e-5);
  });
});
