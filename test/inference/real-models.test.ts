/**
 * The trained models in models/ (committed by the training side): they load and validate,
 * and windowed runs equal a whole-signal run (this checks each manifest's context claim
 * against the runner). Fails until all four models are committed, by design.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FLOATS_PER_STEP, InferenceEngine, packageRoot, WindowedRunner } from '../../src/inference';
import { seededRandom } from '../../src/inference/placeholder';
import { sharedState } from '../../src/inference/protocol';
import { StreamRunner } from '../../src/inference/stream-runner';
import { HeadRunner } from '../../src/inference/provisional-head-runner';

const MODELS_DIR = path.join(packageRoot(), 'models');
const NAMES = ['speech', 'arousal', 'gender', 'emotions'];
const RAW_KEYS: Record<string, string[]> = {
  speech: ['music', 'other', 'speech'], arousal: ['high', 'low', 'neutral'], gender: ['female', 'male'], emotions: ['happy', 'irritated', 'neutral', 'tired'],
};

/** Smooth, log-mel-like random features. */
function features(steps: number, seed: number): Float32Array {
  const r = seededRandom(seed);
  const out = new Float32Array(steps * FLOATS_PER_STEP);
  let level = -6;
  for (let f = 0; f < steps * 4; f++) {
    level = Math.max(-18, Math.min(4, level + r() * 1.5));
    for (let m = 0; m < 64; m++) out[f * 64 + m] = level - m * 0.05 + r();
  }
  return out;
}

/** Pushes `steps` steps of x into a runner in uneven chunks while its calls are in flight, as a live stream does. */
function pushUneven(runner: { push(f: Float32Array, n: number): void }, x: Float32Array, steps: number, seed: number, done: () => void): void {
  const r = seededRandom(seed);
  let s = 0;
  const tick = (): void => {
    const n = Math.min(steps - s, 1 + Math.floor(Math.abs(r()) * 6));
    runner.push(x.slice(s * FLOATS_PER_STEP, (s + n) * FLOATS_PER_STEP), n);
    s += n;
    if (s < steps) setTimeout(tick, Math.abs(r()) * 3);
    else done();
  };
  tick();
}

describe('real models (models/)', () => {
  let engine: InferenceEngine | undefined;
  before(async () => {
    const present = NAMES.filter((n) => fs.existsSync(path.join(MODELS_DIR, n, 'manifest.json')));
    if (present.length > 0) engine = await InferenceEngine.create({ modelsDir: MODELS_DIR, size: 1 });
  });
  after(async () => engine?.close());

  for (const name of NAMES) {
    it(`${name}: valid manifest and ONNX, windowed output equals the whole-signal run`, async () => {
      assert.ok(engine?.registry.has(name), `model ${name} is not in ${MODELS_DIR} yet (expected until it is committed)`);
      const model = engine!.model(name);
      assert.equal(model.placeholder, false);
      assert.deepEqual([...model.rawKeys].sort(), RAW_KEYS[name]);
      const steps = 400;
      const x = features(steps, 11);
      const whole = await engine!.infer(model, x.slice(), steps);
      const C = model.rawKeys.length;
      for (const windowSteps of [64, 5]) {
        const out = new Float32Array(steps * C);
        const runner = new WindowedRunner({
          model,
          infer: (f, n) => engine!.infer(model, f, n),
          onOutput: (start, probs) => out.set(probs, start * C),
          windowSteps,
          minWindowSteps: windowSteps === 5 ? 1 : windowSteps,
        });
        for (let s = 0; s < steps; s += 30) {
          const n = Math.min(30, steps - s);
          await runner.push(x.subarray(s * FLOATS_PER_STEP, (s + n) * FLOATS_PER_STEP), n);
        }
        await runner.end();
        let maxDiff = 0;
        for (let i = 0; i < out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out[i]! - whole[i]!));
        assert.ok(maxDiff <= 1e-5, `${name}, window ${windowSteps}: max difference ${maxDiff} (context in manifest too small?)`);
      }
    });

    it(`${name}: a live stream through the stateful graphs (stream_start.onnx, stream.onnx) equals the whole-signal run`, async () => {
      const model = engine!.model(name);
      assert.ok(model.streaming, `${name} ships a streaming graph`);
      const C = model.rawKeys.length;
      for (const [steps, align, seed] of [[400, 1, 12], [300, 5, 13], [30, 1, 14]] as const) {
        const x = features(steps, seed);
        const whole = await engine!.infer(model, x.slice(), steps);
        const out = new Float32Array(steps * C).fill(NaN);
        let statefulCalls = 0;
        const done = new Promise<void>((resolve, reject) => {
          const runner = new StreamRunner({
            model,
            align,
            infer: (f, n) => engine!.infer(model, f, n),
            stateful: {
              ...model.streaming!,
              infer: (first, f, n, st) => (statefulCalls++, engine!.inferStateful(model, first, f, n, st)),
            },
            onOutput: (start, probs) => {
              out.set(probs, start * C);
              if (runner.done) resolve();
            },
            onError: reject,
          });
          pushUneven(runner, x, steps, seed, () => runner.end());
        });
        await done;
        let maxDiff = 0;
        for (let i = 0; i < out.length; i++) maxDiff = Math.max(maxDiff, Math.abs(out[i]! - whole[i]!));
        assert.ok(maxDiff <= 1e-5, `${name}, ${steps} steps, align ${align}: max difference ${maxDiff}`);
        assert.ok(statefulCalls > 0, 'the stateful graphs were used');
      }
    });

    it(`${name}: a causal provisional head (provisional.json \`head\`), where shipped, fed in uneven chunks equals one call over the whole signal`, async (t) => {
      const model = engine!.model(name);
      const head = model.provisionalHead;
      if (!head) {
        t.skip(`${name} answers provisionally by truncated windows (no head)`);
        return;
      }
      const C = model.rawKeys.length;
      const steps = 300;
      const x = features(steps, 21);
      const once = await engine!.inferHead(model, x.slice(), steps, sharedState(head.stateSize));
      const out = new Float32Array(steps * C).fill(NaN);
      let last = -1;
      await new Promise<void>((resolve, reject) => {
        const runner = new HeadRunner({
          model,
          stateSize: head.stateSize,
          delaySteps: head.delaySteps,
          infer: (_first, f, n, st) => engine!.inferHead(model, f, n, st),
          onOutput: (start, probs, n) => {
            assert.ok(start > last, 'outputs in increasing step order');
            last = start + n - 1;
            out.set(probs, start * C);
            if (last === steps - 1 - head.delaySteps) resolve();
          },
          onError: reject,
        });
        pushUneven(runner, x, steps, 22, () => undefined);
      });
      // output i of the graph answers step i - delay
      let maxDiff = 0;
      for (let s = 0; s + head.delaySteps < steps; s++) {
        for (let c = 0; c < C; c++) maxDiff = Math.max(maxDiff, Math.abs(out[s * C + c]! - once.probs[(s + head.delaySteps) * C + c]!));
      }
      assert.ok(maxDiff <= 1e-5, `${name} head: max difference ${maxDiff}`);
    });

    it(`${name}: a head whose calls end on every other group while the pool is behind answers as one call does`, async (t) => {
      const model = engine!.model(name);
      const head = model.provisionalHead;
      if (!head) {
        t.skip(`${name} has no head`);
        return;
      }
      const C = model.rawKeys.length;
      const steps = 240;
      const x = features(steps, 23);
      const once = await engine!.inferHead(model, x.slice(), steps, sharedState(head.stateSize));
      const out = new Float32Array(steps * C).fill(NaN);
      const stride = Math.max(2, head.stride);
      let groups = 1;
      const callSteps: number[] = [];
      await new Promise<void>((resolve, reject) => {
        const runner = new HeadRunner({
          model,
          stateSize: head.stateSize,
          delaySteps: head.delaySteps,
          stride,
          // behind on every other call
          groupsPerCall: () => groups,
          infer: (first, f, n, st) => {
            callSteps.push(n);
            assert.equal((first + n) % (stride * groups), 0, `a call ending at step ${first + n} ends a group of ${stride * groups}`);
            groups = 3 - groups;
            return engine!.inferHead(model, f, n, st);
          },
          onOutput: (start, probs) => out.set(probs, start * C),
          onError: reject,
        });
        pushUneven(runner, x, steps, 24, () => setTimeout(resolve, 200));
      });
      assert.ok(callSteps.some((n) => n >= 2 * stride), 'some calls took two groups');
      const answered = callSteps.reduce((a, n) => a + n, 0) - head.delaySteps;
      assert.ok(answered >= steps - 4 * stride, `answered ${answered} of ${steps} steps`);
      let maxDiff = 0;
      for (let s = 0; s < answered; s++) {
        for (let c = 0; c < C; c++) maxDiff = Math.max(maxDiff, Math.abs(out[s * C + c]! - once.probs[(s + head.delaySteps) * C + c]!));
      }
      assert.ok(maxDiff <= 1e-5, `${name} head: max difference ${maxDiff}`);
    });

    it(`${name}: stream states in shared buffers are updated in place by the worker and equal states that travel`, async () => {
      const model = engine!.model(name);
      const g = model.streaming!;
      const per = 2 * FLOATS_PER_STEP;
      const xs = [0, 1, 2].map((k) => features(8, 40 + k));
      const shared = xs.map(() => sharedState(g.stateSize));
      let travelling = xs.map(() => new Float32Array(g.stateSize));
      for (let c = 0; c < 4; c++) {
        // three streams at once, so their calls are batched as live streams' calls are
        const a = await Promise.all(xs.map((x, k) => engine!.inferStateful(model, 2 * c, x.slice(c * per, (c + 1) * per), 2, shared[k]!)));
        const b = await Promise.all(xs.map((x, k) => engine!.inferStateful(model, 2 * c, x.slice(c * per, (c + 1) * per), 2, travelling[k]!)));
        travelling = b.map((r) => r.state.slice());
        a.forEach((r, k) => {
          assert.equal(r.state, shared[k], 'the same shared array comes back');
          assert.deepEqual(Array.from(r.probs), Array.from(b[k]!.probs), `${name}, call ${c}, stream ${k}: outputs`);
          assert.deepEqual(Array.from(shared[k]!), Array.from(travelling[k]!), `${name}, call ${c}, stream ${k}: states`);
        });
        assert.ok(shared.every((s) => s.some((v) => v !== 0)), 'the worker wrote the new states');
      }
    });

    it(`${name}: a batch mixing a shared and a travelling state keeps the shared one shared`, async () => {
      const model = engine!.model(name);
      const x = features(2, 50);
      const shared = sharedState(model.streaming!.stateSize);
      const [a, b] = await Promise.all([
        engine!.inferStateful(model, 0, x.slice(), 2, shared),
        engine!.inferStateful(model, 0, x.slice(), 2, new Float32Array(model.streaming!.stateSize)),
      ]);
      assert.equal(a.state, shared);
      assert.deepEqual(Array.from(shared), Array.from(b.state));
      assert.ok(shared.some((v) => v !== 0));
    });
  }
});
