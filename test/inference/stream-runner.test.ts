/**
 * StreamRunner with a fake model (no ONNX): windows cover the model's context exactly, outputs
 * come in order and complete, at most one call is in flight (steps that arrive meanwhile join
 * the next call), calls end on output-step boundaries until end(), and hold() stops new calls.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { FLOATS_PER_STEP } from '../../src/inference/registry';
import { StreamRunner } from '../../src/inference/stream-runner';

const LEFT = 3;
const RIGHT = 2;
const model = { name: 'fake', rawKeys: ['a', 'b'], context: { leftSteps: LEFT, rightSteps: RIGHT } };

/** Features of steps [from, from+n): every float of step s is s. */
function features(from: number, n: number): Float32Array {
  const f = new Float32Array(n * FLOATS_PER_STEP);
  for (let i = 0; i < n; i++) f.fill(from + i, i * FLOATS_PER_STEP, (i + 1) * FLOATS_PER_STEP);
  return f;
}

/** Answers pending model calls in order (and the calls they lead to), letting the runner react after each. */
async function answerAll(calls: { resolve: () => void }[]): Promise<void> {
  for (let i = 0; i < 100 && calls.length > 0; i++) {
    calls.shift()!.resolve();
    await new Promise((r) => setImmediate(r));
  }
}

interface Call {
  first: number;
  steps: number;
  resolve: () => void;
}

function harness(align = 1) {
  const calls: Call[] = [];
  const outputs: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const runner = new StreamRunner({
    model,
    align,
    maxWindowSteps: 8,
    infer: (f, steps) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      // "Model": class a = the step's own index (read back from its features), b = 0.
      const probs = new Float32Array(steps * 2);
      for (let i = 0; i < steps; i++) probs[i * 2] = f[i * FLOATS_PER_STEP]!;
      return new Promise((resolve) => calls.push({ first: f[0]!, steps, resolve: () => (inFlight--, resolve(probs)) }));
    },
    onOutput: (start, probs, steps) => {
      for (let i = 0; i < steps; i++) outputs.push(probs[i * 2]!);
      assert.equal(start + steps, outputs.length, 'consecutive outputs');
    },
    onError: (e) => assert.fail(e),
  });
  return { runner, calls, outputs, flush: () => answerAll(calls), maxInFlight: () => maxInFlight };
}

describe('StreamRunner', () => {
  it('runs a step once its right context has arrived, with its left context (or the signal start) in the window', async () => {
    const h = harness();
    h.runner.push(features(0, RIGHT), RIGHT);
    assert.equal(h.calls.length, 0, 'step 0 needs steps 1..2');
    h.runner.push(features(RIGHT, 1), 1);
    assert.equal(h.calls.length, 1);
    assert.deepEqual([h.calls[0]!.first, h.calls[0]!.steps], [0, 1 + RIGHT]);
    await h.flush();
    assert.deepEqual(h.outputs, [0]);
    for (let s = RIGHT + 1; s < 12; s++) {
      h.runner.push(features(s, 1), 1);
      const c = h.calls[0]!;
      const out = s - RIGHT;
      assert.deepEqual([c.first, c.steps], [Math.max(0, out - LEFT), Math.min(out, LEFT) + 1 + RIGHT], `window of step ${out}`);
      await h.flush();
    }
    h.runner.end();
    await h.flush();
    assert.deepEqual(h.outputs, Array.from({ length: 12 }, (_, i) => i));
    assert.ok(h.runner.done);
  });

  it('keeps one call in flight: steps arriving meanwhile join the next call', async () => {
    const h = harness();
    h.runner.push(features(0, RIGHT + 1), RIGHT + 1);
    for (let s = RIGHT + 1; s < 20; s++) h.runner.push(features(s, 1), 1);
    assert.equal(h.calls.length, 1, 'one call while the first is in flight');
    await h.flush();
    assert.equal(h.maxInFlight(), 1);
    assert.ok(h.runner.calls <= 4, `steps were coalesced (${h.runner.calls} calls)`);
    h.runner.end();
    await h.flush();
    assert.deepEqual(h.outputs, Array.from({ length: 20 }, (_, i) => i));
  });

  it('ends calls on output-step boundaries until end(), then runs the rest', async () => {
    const h = harness(4);
    const ends: number[] = [];
    for (let s = 0; s < 15; s++) {
      h.runner.push(features(s, 1), 1);
      while (h.calls.length > 0) {
        await h.flush();
        ends.push(h.outputs.length);
      }
    }
    assert.ok(ends.every((e) => e % 4 === 0), `outputs end on multiples of 4: ${ends.join(', ')}`);
    assert.equal(h.outputs.length, 12, 'steps 12.. wait for their output step (15 - 2 lookahead = 13 ready)');
    h.runner.end();
    await h.flush();
    assert.deepEqual(h.outputs, Array.from({ length: 15 }, (_, i) => i));
  });

  it('hold() starts no new call; release resumes; close() drops what is in flight', async () => {
    const h = harness();
    h.runner.hold(true);
    h.runner.push(features(0, 10), 10);
    assert.equal(h.calls.length, 0);
    h.runner.hold(false);
    assert.equal(h.calls.length, 1);
    h.runner.close();
    await h.flush();
    assert.deepEqual(h.outputs, []);
  });

  it('stateful graph: every step fed once, outputs as soon as windowed ones, the tail windowed after end()', async () => {
    const calls: { resolve: () => void }[] = [];
    const source: string[] = [];
    const values: number[] = [];
    const fed: number[] = [];
    const feeds: number[] = [];
    const runner = new StreamRunner({
      model,
      maxWindowSteps: 8,
      infer: (f, steps) => {
        const probs = new Float32Array(steps * 2);
        for (let i = 0; i < steps; i++) probs[i * 2] = f[i * FLOATS_PER_STEP]!;
        return new Promise((resolve) => calls.push({ resolve: () => resolve(probs) }));
      },
      stateful: {
        stateSize: RIGHT,
        delaySteps: RIGHT,
        // "Graph": delays the step index by RIGHT through its state (which holds index + 1, so the zero start
        // state comes out as -1, as a real graph's outputs before the signal start are junk); b = 1 marks it.
        infer: (first, f, steps, state) => {
          assert.equal(state.length, RIGHT);
          assert.equal(first, fed.length, 'firstStep = steps fed before');
          feeds.push(steps);
          const probs = new Float32Array(steps * 2);
          const q = [...state];
          for (let i = 0; i < steps; i++) {
            fed.push(f[i * FLOATS_PER_STEP]!);
            probs[i * 2] = q.shift()! - 1;
            probs[i * 2 + 1] = 1;
            q.push(f[i * FLOATS_PER_STEP]! + 1);
          }
          return new Promise((resolve) => calls.push({ resolve: () => resolve({ probs, state: Float32Array.from(q) }) }));
        },
      },
      onOutput: (start, probs, steps) => {
        for (let i = 0; i < steps; i++) {
          values.push(probs[i * 2]!);
          source.push(probs[i * 2 + 1] === 1 ? 'graph' : 'window');
        }
        assert.equal(start + steps, values.length, 'consecutive outputs');
      },
      onError: (e) => assert.fail(e),
    });
    const flush = (): Promise<void> => answerAll(calls);
    const N = 30;
    for (let s = 0; s < N; s++) {
      runner.push(features(s, 1), 1);
      await flush();
      // same latency as windowed calls: every step is out once its right context is in
      assert.equal(values.length, Math.max(0, s + 1 - RIGHT), `outputs after step ${s}`);
    }
    runner.end();
    await flush();
    assert.ok(runner.done);
    assert.deepEqual(values, Array.from({ length: N }, (_, i) => i));
    assert.deepEqual(source, Array.from({ length: N }, (_, i) => (i >= N - RIGHT ? 'window' : 'graph')));
    assert.deepEqual(fed, Array.from({ length: N }, (_, i) => i), 'the graph is fed every step once, in order');
    // the steps before the first output are fed in one call (they give no output of their own)
    assert.deepEqual(feeds.slice(0, 2), [RIGHT + 1, 1]);
  });

  it('stateful graph: a stream shorter than the lookahead is answered by the end window alone', async () => {
    const outputs: number[] = [];
    let graphCalls = 0;
    const runner = new StreamRunner({
      model,
      infer: async (f, steps) => {
        const probs = new Float32Array(steps * 2);
        for (let i = 0; i < steps; i++) probs[i * 2] = f[i * FLOATS_PER_STEP]!;
        return probs;
      },
      stateful: {
        stateSize: 1,
        delaySteps: RIGHT,
        infer: async (_first, _f, steps) => (graphCalls++, { probs: new Float32Array(steps * 2).fill(-1), state: new Float32Array(1) }),
      },
      onOutput: (_start, probs, steps) => {
        for (let i = 0; i < steps; i++) outputs.push(probs[i * 2]!);
      },
      onError: (e) => assert.fail(e),
    });
    runner.push(features(0, RIGHT - 1), RIGHT - 1);
    runner.end();
    for (let i = 0; i < 10 && !runner.done; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(outputs, Array.from({ length: RIGHT - 1 }, (_, i) => i));
    assert.ok(graphCalls <= 1);
  });

  it('stateful graph: a failed call or a wrong-sized answer fails the runner once, and nothing more is emitted', async () => {
    for (const answer of ['reject', 'short-state'] as const) {
      const errors: Error[] = [];
      const outputs: number[] = [];
      let calls = 0;
      const runner = new StreamRunner({
        model,
        infer: async (_f, steps) => new Float32Array(steps * 2),
        stateful: {
          stateSize: 4,
          delaySteps: RIGHT,
          infer: async (_first, _f, steps) => {
            calls++;
            if (answer === 'reject') throw new Error('worker gone');
            return { probs: new Float32Array(steps * 2), state: new Float32Array(3) };
          },
        },
        onOutput: (_s, _p, steps) => outputs.push(steps),
        onError: (e) => errors.push(e),
      });
      for (let s = 0; s < 10; s++) {
        runner.push(features(s, 1), 1);
        await new Promise((r) => setImmediate(r));
      }
      runner.end();
      await new Promise((r) => setImmediate(r));
      assert.equal(errors.length, 1, answer);
      assert.match(errors[0]!.message, answer === 'reject' ? /worker gone/ : /streaming graph of fake/);
      assert.equal(calls, 1, 'no call after the failure');
      assert.deepEqual(outputs, []);
      assert.equal(runner.done, false);
    }
  });
});

