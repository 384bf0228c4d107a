/**
 * ProvisionalRunner with a fake model (no ONNX) and the models' provisional plans: a call starts
 * once its steps plus the lookahead have arrived, covers `stride` steps (aligned), its window is
 * [a - left, b + P) clipped to the signal (left: the plan's left context), and steps whose final
 * was sent are never computed.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { FAST_PROVISIONAL, ProvisionalRunner, provisionalPlan, SLOW_PROVISIONAL } from '../../src/inference/provisional-runner';
import { FLOATS_PER_STEP, ModelRegistry } from '../../src/inference/registry';

const MODELS = path.join(__dirname, '..', '..', '..', 'models');
const speechLike = { name: 'speech', context: { leftSteps: 12, rightSteps: 12 } };
const speakerLike = { name: 'gender', context: { leftSteps: 24, rightSteps: 24 } };

/** Features of steps [from, from+n): every float of step s is s. */
function features(from: number, n: number): Float32Array {
  const f = new Float32Array(n * FLOATS_PER_STEP);
  for (let i = 0; i < n; i++) f.fill(from + i, i * FLOATS_PER_STEP, (i + 1) * FLOATS_PER_STEP);
  return f;
}

describe('provisional plans', () => {
  it('without a scored plan: speech-like models answer every step after 1 step with 8 steps of left context, the speaker models every 4 steps at once with 12', () => {
    assert.deepEqual(provisionalPlan(speechLike, 1), FAST_PROVISIONAL);
    assert.deepEqual(FAST_PROVISIONAL, { lookahead: 1, stride: 1, leftContext: 8 });
    assert.deepEqual(provisionalPlan(speakerLike, 1), SLOW_PROVISIONAL);
    assert.deepEqual(SLOW_PROVISIONAL, { lookahead: 0, stride: 4, leftContext: 12 });
    // a model's own plan wins over the default, an override over both
    const own = { lookahead: 4, stride: 4, leftContext: 12 };
    assert.deepEqual(provisionalPlan({ ...speakerLike, provisional: own }, 1), own);
    assert.deepEqual(provisionalPlan({ ...speakerLike, provisional: own }, 1, SLOW_PROVISIONAL), SLOW_PROVISIONAL);
  });

  it('each scored model runs the plan its validation chose (models/<task>/provisional.json, read by the registry; used where no head is shipped: there emotions waits 4 steps)', () => {
    const registry = ModelRegistry.loadSync();
    for (const task of ['speech', 'gender', 'arousal', 'emotions']) {
      const scored = JSON.parse(fs.readFileSync(path.join(MODELS, task, 'provisional.json'), 'utf8')) as { shipped: { lookahead_steps: number; stride_steps: number; left_context_steps: number } };
      const plan = provisionalPlan(registry.get(task), 1);
      assert.deepEqual(plan, { lookahead: scored.shipped.lookahead_steps, stride: scored.shipped.stride_steps, leftContext: scored.shipped.left_context_steps }, task);
    }
    assert.deepEqual(provisionalPlan(registry.get('emotions'), 1), { lookahead: 4, stride: 4, leftContext: 12 });
    assert.deepEqual(provisionalPlan(registry.get('speech'), 1), FAST_PROVISIONAL);
  });

  it('strides are whole output steps; lookahead and left context never exceed the model\'s; an override applies to every model', () => {
    assert.deepEqual(provisionalPlan(speechLike, 4), { lookahead: 1, stride: 4, leftContext: 8 });
    assert.deepEqual(provisionalPlan(speakerLike, 3), { lookahead: 0, stride: 6, leftContext: 12 });
    assert.deepEqual(provisionalPlan({ context: { leftSteps: 1, rightSteps: 1 } }, 1, { lookahead: 2, stride: 1, leftContext: 12 }), { lookahead: 1, stride: 1, leftContext: 1 });
    assert.deepEqual(provisionalPlan(speechLike, 1, { lookahead: 2, stride: 1, leftContext: 12 }), { lookahead: 2, stride: 1, leftContext: 12 });
  });
});

describe('ProvisionalRunner', () => {
  it('a call every 4 steps once they and 2 more have arrived, over [a - left, a + 4 + 2), outputs of the 4 steps', async () => {
    const LEFT = 3;
    const calls: { first: number; steps: number }[] = [];
    const outputs: Array<{ start: number; values: number[] }> = [];
    let finalFrom = 0;
    const runner = new ProvisionalRunner({
      model: { name: 'fake', rawKeys: ['a', 'b'], context: { leftSteps: LEFT, rightSteps: 6 } },
      lookahead: 2,
      align: 4,
      finalFrom: () => finalFrom,
      infer: (f, steps) => {
        calls.push({ first: f[0]!, steps });
        // "Model": class a = the step's own index (read back from its features), b = 0.
        const probs = new Float32Array(steps * 2);
        for (let i = 0; i < steps; i++) probs[i * 2] = f[i * FLOATS_PER_STEP]!;
        return Promise.resolve(probs);
      },
      onOutput: (start, probs, steps) => outputs.push({ start, values: Array.from({ length: steps }, (_, i) => probs[i * 2]!) }),
      onError: (e) => assert.fail(e),
    });
    const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
    for (let s = 0; s < 5; s++) {
      runner.push(features(s, 1), 1);
      await tick();
    }
    assert.equal(calls.length, 0, 'steps 0-3 wait for steps 4 and 5');
    runner.push(features(5, 1), 1);
    await tick();
    assert.deepEqual(calls, [{ first: 0, steps: 6 }], 'window [0, 6): no left context before the signal start');
    assert.deepEqual(outputs, [{ start: 0, values: [0, 1, 2, 3] }]);
    for (let s = 6; s < 10; s++) {
      runner.push(features(s, 1), 1);
      await tick();
    }
    assert.deepEqual(calls[1], { first: 4 - LEFT, steps: LEFT + 4 + 2 }, 'window [a - left, b + P)');
    assert.deepEqual(outputs[1], { start: 4, values: [4, 5, 6, 7] });
    // the finals of steps up to 13 are sent: the group [8, 12) is skipped, the next call starts at 16
    finalFrom = 13;
    for (let s = 10; s < 22; s++) {
      runner.push(features(s, 1), 1);
      await tick();
    }
    assert.deepEqual(outputs.slice(2), [{ start: 16, values: [16, 17, 18, 19] }]);
    runner.close();
  });

  it('a plan with less left context than the model starts each window there', async () => {
    const calls: { first: number; steps: number }[] = [];
    const runner = new ProvisionalRunner({
      model: { name: 'fake', rawKeys: ['a'], context: { leftSteps: 10, rightSteps: 6 } },
      lookahead: 1,
      leftContext: 3,
      finalFrom: () => 0,
      infer: (f, steps) => {
        calls.push({ first: f[0]!, steps });
        return Promise.resolve(new Float32Array(steps));
      },
      onOutput: () => undefined,
      onError: (e) => assert.fail(e),
    });
    for (let s = 0; s < 12; s++) {
      runner.push(features(s, 1), 1);
      await new Promise((r) => setImmediate(r));
    }
    assert.deepEqual(calls.at(-1), { first: 10 - 3, steps: 3 + 1 + 1 }, 'step 10: window [7, 12)');
    runner.close();
  });

  it('makes no call for an output step whose answer cannot show (`shows` false): zeros stand in, the next steps are called as before', async () => {
    const calls: { first: number; steps: number }[] = [];
    const outputs: Array<{ start: number; values: number[] }> = [];
    const asked: Array<[number, number]> = [];
    const hidden = new Set([4, 5, 6, 7, 12, 13, 14, 15]); // say silent steps
    const runner = new ProvisionalRunner({
      model: { name: 'fake', rawKeys: ['a'], context: { leftSteps: 3, rightSteps: 6 } },
      lookahead: 2,
      align: 4,
      finalFrom: () => 0,
      shows: (from, to) => {
        asked.push([from, to]);
        for (let s = from; s < to; s++) if (!hidden.has(s)) return true;
        return false;
      },
      infer: (f, steps) => {
        calls.push({ first: f[0]!, steps });
        const probs = new Float32Array(steps);
        for (let i = 0; i < steps; i++) probs[i] = 1 + f[i * FLOATS_PER_STEP]!;
        return Promise.resolve(probs);
      },
      onOutput: (start, probs, steps) => outputs.push({ start, values: Array.from(probs.subarray(0, steps)) }),
      onError: (e) => assert.fail(e),
    });
    for (let s = 0; s < 22; s++) {
      runner.push(features(s, 1), 1);
      await new Promise((r) => setImmediate(r));
    }
    assert.deepEqual(asked, [[0, 4], [4, 8], [8, 12], [12, 16], [16, 20]], 'asked once per group of `align` steps');
    assert.deepEqual(
      calls.map((c) => c.first),
      [0, 8 - 3, 16 - 3],
      'groups 0, 8 and 16 called (with their left context); 4 and 12 not',
    );
    assert.equal(runner.skipped, 2);
    assert.equal(runner.calls, 3);
    assert.deepEqual(outputs, [
      { start: 0, values: [1, 2, 3, 4] },
      { start: 4, values: [0, 0, 0, 0] },
      { start: 8, values: [9, 10, 11, 12] },
      { start: 12, values: [0, 0, 0, 0] },
      { start: 16, values: [17, 18, 19, 20] },
    ]);
    runner.close();
  });
});
