import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { countTerminations } from '../worker-terminations';
import { FLOATS_PER_STEP, InferencePool, ModelRegistry, packageRoot, writePlaceholderModels } from '../../src/inference';
import { seededRandom } from '../../src/inference/placeholder';
import { sessionOptionsFor } from '../../src/inference/session-options';
import { loadEncoder } from '../../src/inference/views';

function randomFeatures(steps: number, seed: number): Float32Array {
  const r = seededRandom(seed);
  return Float32Array.from({ length: steps * FLOATS_PER_STEP }, () => r() * 6 - 4);
}

let tmp: string;
let reg: ModelRegistry;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-pool-'));
  writePlaceholderModels(tmp, [{ name: 'speech' }, { name: 'heavy', rawKeys: ['a', 'b'], hidden: 256 }]);
  reg = ModelRegistry.loadSync({ modelsDir: tmp });
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('inference pool', () => {
  // How long the event loop stalls while models run is measured by `npm run bench:responsiveness`.
  it('keeps the event loop free while models run: timers fire while a run is pending', async () => {
    const pool = new InferencePool({ size: 1 });
    try {
      const heavy = reg.get('heavy');
      const steps = 24000;
      const input = randomFeatures(steps, 1);
      await pool.run(heavy, input.slice(), steps); // warm-up: session creation
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const busy = pool.stats.busyMs;
      let out: Float32Array;
      try {
        out = await pool.run(heavy, input.slice(), steps);
      } finally {
        clearInterval(timer);
      }
      assert.ok(out.length > 0);
      // Had inference run on this thread, no timer could have fired before the run resolved.
      assert.ok(pool.stats.busyMs > busy, 'the worker ran the model');
      assert.ok(ticks > 0, `${ticks} timer ticks while the run was pending`);
    } finally {
      await pool.close();
    }
  });

  it('close() lets every worker dispose of its sessions and end by itself (never stopped from outside mid-call)', async () => {
    const pool = new InferencePool({ size: 2 });
    const speech = reg.get('speech');
    const stopped = countTerminations();
    try {
      // both workers hold a session, and a call is in flight when close() starts
      await pool.load([speech]);
      const pending = pool.run(speech, new Float32Array(8 * FLOATS_PER_STEP), 8);
      await new Promise((r) => setImmediate(r)); // dispatched to a worker
      await pool.close();
      assert.ok((await pending).length > 0, 'the call in flight finished');
      assert.equal(stopped.count, 0, 'no worker was terminated');
    } finally {
      stopped.restore();
    }
  });

  it('batches jobs for the same model and window length into one call when workers are busy', async () => {
    const pool = new InferencePool({ size: 1, maxBatch: 8 });
    try {
      const sp = reg.get('speech');
      const inputs = [0, 1, 2, 3, 4].map((i) => randomFeatures(40, 10 + i));
      const single: Float32Array[] = [];
      for (const x of inputs) single.push(await pool.run(sp, x.slice(), 40));
      const before = pool.stats;
      const batched = await Promise.all(inputs.map((x) => pool.run(sp, x.slice(), 40)));
      assert.equal(pool.stats.calls - before.calls, 1);
      assert.equal(pool.stats.windows - before.windows, 5);
      // the same call counted under its graph (the bench's per-graph breakdown)
      const graph = pool.stats.byGraph['speech/model.onnx'];
      assert.ok(graph, `graphs: ${Object.keys(pool.stats.byGraph).join(', ')}`);
      assert.deepEqual([graph.calls - before.byGraph['speech/model.onnx']!.calls, graph.windows - before.byGraph['speech/model.onnx']!.windows], [1, 5]);
      batched.forEach((b, i) => {
        assert.equal(b.length, 40 * 3);
        for (let j = 0; j < b.length; j++) assert.ok(Math.abs(b[j]! - single[i]![j]!) <= 1e-6);
      });
      // Different window lengths are never mixed in one batch.
      const before2 = pool.stats;
      await Promise.all([pool.run(sp, randomFeatures(40, 1), 40), pool.run(sp, randomFeatures(41, 2), 41)]);
      assert.equal(pool.stats.calls - before2.calls, 2);
    } finally {
      await pool.close();
    }
  });

  it('runs an urgent job before the jobs queued ahead of it', async () => {
    const pool = new InferencePool({ size: 1, maxBatch: 1 });
    try {
      const sp = reg.get('speech');
      await pool.run(sp, randomFeatures(30, 1), 30); // warm-up: session creation
      const order: string[] = [];
      const job = (name: string, steps: number, urgent: boolean): Promise<void> => pool.run(sp, randomFeatures(steps, steps), steps, urgent).then(() => void order.push(name));
      // the first job takes the worker; the others queue behind it in this order
      const running = job('running', 30, false);
      await new Promise((r) => setImmediate(r));
      await Promise.all([running, job('queued 1', 31, false), job('queued 2', 32, false), job('urgent', 33, true)]);
      assert.deepEqual(order, ['running', 'urgent', 'queued 1', 'queued 2']);
    } finally {
      await pool.close();
    }
  });

  it('is behind while its jobs wait in the queue longer than behindWaitMs, and not once they stop waiting', async () => {
    const pool = new InferencePool({ size: 1, maxBatch: 1, behindWaitMs: 1 });
    try {
      const sp = reg.get('speech');
      await pool.run(sp, randomFeatures(30, 1), 30); // warm-up: session creation
      assert.equal(pool.behind, false);
      // one worker, one window a call: 40 long windows queue behind each other
      await Promise.all(Array.from({ length: 40 }, (_, i) => pool.run(sp, randomFeatures(400, i), 400)));
      assert.equal(pool.behind, true);
      assert.ok(pool.stats.windowsBehind > 0);
      // jobs that find the worker idle wait for nothing: the running mean falls back under the threshold
      for (let i = 0; i < 800 && pool.behind; i++) await pool.run(sp, randomFeatures(2, i), 2);
      assert.equal(pool.behind, false);
      // without a threshold the pool is never behind
      const never = new InferencePool({ size: 1, maxBatch: 1 });
      try {
        await Promise.all(Array.from({ length: 10 }, (_, i) => never.run(sp, randomFeatures(400, i), 400)));
        assert.equal(never.behind, false);
      } finally {
        await never.close();
      }
    } finally {
      await pool.close();
    }
  });

  it('with bundle, hands a busy worker the batches of several graphs in one message, each answered as before', async () => {
    const pool = new InferencePool({ size: 1, maxBatch: 8, bundle: 4 });
    try {
      const sp = reg.get('speech');
      await pool.run(sp, randomFeatures(30, 1), 30); // warm-up: session creation
      const before = pool.stats;
      const running = pool.run(sp, randomFeatures(30, 2), 30);
      await new Promise((r) => setImmediate(r));
      // three graphs (window lengths) queue behind it, two jobs of one of them
      const queued = [31, 32, 33, 33].map((steps, i) => pool.run(sp, randomFeatures(steps, 10 + i), steps));
      const outs = await Promise.all([running, ...queued]);
      assert.deepEqual(outs.map((o) => o.length / 3), [30, 31, 32, 33, 33]);
      const after = pool.stats;
      assert.equal(after.calls - before.calls, 4, 'one call per graph');
      assert.equal(after.handOvers - before.handOvers, 2, 'the running one, then the three others together');
      // the same answers as one by one
      const alone = await pool.run(sp, randomFeatures(32, 11), 32);
      assert.deepEqual(Array.from(outs[2]!), Array.from(alone));
    } finally {
      await pool.close();
    }
  });

  it('with depth 2, hands a running worker its next batch before it answers, with the same answers', async () => {
    for (const depth of [1, 2]) {
      const pool = new InferencePool({ size: 1, maxBatch: 8, depth });
      try {
        const sp = reg.get('speech');
        await pool.run(sp, randomFeatures(30, 1), 30); // warm-up: session creation
        const before = pool.stats;
        let longDone = false;
        const long = pool.run(sp, randomFeatures(4000, 2), 4000).finally(() => (longDone = true)); // ~0.1-0.5 s
        await new Promise((r) => setImmediate(r));
        const second = pool.run(sp, randomFeatures(31, 3), 31);
        await new Promise((r) => setImmediate(r));
        assert.equal(longDone, false, 'the long call still runs');
        assert.equal(pool.stats.handOvers - before.handOvers, depth, depth === 2 ? 'the second batch handed to the busy worker' : 'the second waits');
        const outs = await Promise.all([long, second]);
        assert.deepEqual(outs.map((o) => o.length / 3), [4000, 31]);
        const alone = await pool.run(sp, randomFeatures(31, 3), 31);
        assert.deepEqual(Array.from(outs[1]!), Array.from(alone));
      } finally {
        await pool.close();
      }
    }
  });

  it('spreads jobs over idle workers before batching', async () => {
    const pool = new InferencePool({ size: 2 });
    try {
      const sp = reg.get('speech');
      await Promise.all([pool.run(sp, randomFeatures(30, 1), 30), pool.run(sp, randomFeatures(30, 2), 30)]);
      assert.deepEqual([pool.stats.calls, pool.stats.windows], [2, 2]);
    } finally {
      await pool.close();
    }
  });

  it('with dispatchIntervalMs, jobs submitted on different ticks soon after a dispatch share the next one', async () => {
    const pool = new InferencePool({ size: 2, dispatchIntervalMs: 3000 });
    try {
      const sp = reg.get('speech');
      await pool.load([sp]);
      const x = randomFeatures(30, 1);
      const alone = await pool.run(sp, x.slice(), 30); // an idle pool dispatches at once
      const before = pool.stats;
      const jobs: Promise<Float32Array>[] = [];
      for (let i = 0; i < 4; i++) {
        jobs.push(pool.run(sp, i === 0 ? x.slice() : randomFeatures(30, 2 + i), 30));
        await new Promise((r) => setImmediate(r)); // each job on its own event-loop turn
      }
      const outs = await Promise.all(jobs);
      assert.equal(pool.stats.windows - before.windows, 4);
      assert.equal(pool.stats.calls - before.calls, 2, 'the four jobs went as one batch per idle worker');
      for (let j = 0; j < alone.length; j++) assert.ok(Math.abs(outs[0]![j]! - alone[j]!) <= 1e-6);
    } finally {
      await pool.close();
    }
  });

  it('transfers the input buffer to the worker instead of copying it', async () => {
    const pool = new InferencePool({ size: 1 });
    try {
      const x = randomFeatures(10, 3);
      const out = await pool.run(reg.get('speech'), x, 10);
      assert.equal(x.length, 0, 'detached after transfer');
      assert.equal(out.length, 30);
    } finally {
      await pool.close();
    }
  });

  it('load() reports a corrupt model file by name; bad input and closed pools are rejected', async () => {
    const dir = path.join(tmp, 'corrupt');
    writePlaceholderModels(dir, [{ name: 'speech' }]);
    const file = path.join(dir, 'speech', 'model.onnx');
    fs.writeFileSync(file, Buffer.from('garbage'));
    const bad = ModelRegistry.loadSync({ modelsDir: dir }).get('speech');
    const pool = new InferencePool({ size: 1 });
    await assert.rejects(pool.load([bad]), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'MODEL_LOAD_FAILED');
      assert.ok(e.message.includes(file), e.message);
      return true;
    });
    await assert.rejects(pool.run(bad, randomFeatures(2, 1), 2), { code: 'MODEL_LOAD_FAILED' });
    await assert.rejects(pool.run(reg.get('speech'), new Float32Array(100), 1), { code: 'INVALID_ARGUMENT' });
    await pool.close();
    await assert.rejects(pool.run(reg.get('speech'), randomFeatures(1, 1), 1), { code: 'CLOSED' });
  });

  it('runs encoders without onnxruntime\'s memory pattern (a block per worker held between calls), networks with it', () => {
    const encoder = loadEncoder(path.join(packageRoot(), 'models'), 'campplus', 'pool.test.ts');
    assert.equal(sessionOptionsFor(encoder).enableMemPattern, false);
    assert.notEqual(sessionOptionsFor(reg.get('speech')).enableMemPattern, false);
    for (const m of [encoder, reg.get('speech')]) assert.equal(sessionOptionsFor(m).intraOpNumThreads, 1, 'one thread per session: the pool is the parallelism');
  });

  it('gives encoders the threads asked for (sleeping, not spinning, between operators), networks one, with the same embeddings', async () => {
    const encoder = loadEncoder(path.join(packageRoot(), 'models'), 'campplus', 'pool.test.ts');
    const two = sessionOptionsFor(encoder, 2);
    assert.equal(two.intraOpNumThreads, 2);
    assert.deepEqual(two.extra, { session: { intra_op: { allow_spinning: '0' } } });
    assert.equal(two.enableMemPattern, false);
    assert.equal(sessionOptionsFor(reg.get('speech'), 2).intraOpNumThreads, 1, 'networks keep one thread');
    assert.throws(() => new InferencePool({ size: 1, encoderThreads: 0 }), { code: 'INVALID_ARGUMENT' });
    const rnd = seededRandom(11);
    const window = Float32Array.from({ length: encoder.pcmFloats }, () => 0.1 * (rnd() - 0.5));
    const embed = async (encoderThreads: number): Promise<Float32Array> => {
      const pool = new InferencePool({ size: 1, encoderThreads });
      try {
        assert.equal(pool.encoderThreads, encoderThreads);
        return await pool.runEncoder(encoder, window.slice());
      } finally {
        await pool.close();
      }
    };
    const [one, threaded] = [await embed(1), await embed(2)];
    assert.equal(threaded.length, encoder.dim);
    for (let i = 0; i < one.length; i++) assert.ok(Math.abs(threaded[i]! - one[i]!) < 1e-4, `dimension ${i}: ${threaded[i]} vs ${one[i]}`);
  });

  it('releases sessions on request: the next run opens the model file again; nothing is released while a job of it waits or runs', async () => {
    const dir = path.join(tmp, 'release');
    writePlaceholderModels(dir, [{ name: 'speech' }]);
    const model = ModelRegistry.loadSync({ modelsDir: dir }).get('speech');
    const pool = new InferencePool({ size: 1 });
    try {
      const input = randomFeatures(4, 3);
      const first = Float32Array.from(await pool.run(model, input.slice(), 4));
      const queued = pool.run(model, input.slice(), 4);
      assert.equal(await pool.releaseSessions([model]), false, 'a job of the model waits');
      await queued;
      const bytes = fs.readFileSync(model.modelPath);
      fs.writeFileSync(model.modelPath, Buffer.from('garbage'));
      assert.deepEqual(Float32Array.from(await pool.run(model, input.slice(), 4)), first, 'the open session runs without its file');
      assert.equal(await pool.releaseSessions([model]), true);
      await assert.rejects(pool.run(model, input.slice(), 4), { code: 'MODEL_LOAD_FAILED' }, 'released: the next run opens the file');
      fs.writeFileSync(model.modelPath, bytes);
      assert.deepEqual(Float32Array.from(await pool.run(model, input.slice(), 4)), first, 'opened again, the same answers');
    } finally {
      await pool.close();
    }
  });

  it('calls an encoder with at most its manifest\'s max_batch windows, and the batch gives each window its own embedding', async () => {
    const encoder = loadEncoder(path.join(packageRoot(), 'models'), 'campplus', 'pool.test.ts');
    assert.ok(encoder.maxBatch !== undefined && encoder.maxBatch < 8, `campplus max_batch ${encoder.maxBatch}`);
    const pool = new InferencePool({ size: 1, maxBatch: 64 });
    try {
      const rnd = seededRandom(7);
      const windows = Array.from({ length: 10 }, () => Float32Array.from({ length: encoder.pcmFloats }, () => 0.1 * (rnd() - 0.5)));
      const alone = await pool.runEncoder(encoder, windows[0]!.slice());
      const calls = pool.stats.calls;
      const out = await Promise.all(windows.map((w) => pool.runEncoder(encoder, w.slice())));
      assert.equal(pool.stats.calls - calls, Math.ceil(10 / encoder.maxBatch!), 'calls of at most max_batch windows');
      for (let i = 0; i < alone.length; i++) assert.ok(Math.abs(out[0]![i]! - alone[i]!) < 1e-4);
      assert.ok(out[1]!.some((v, i) => Math.abs(v - out[0]![i]!) > 1e-3), 'another window, another embedding');
    } finally {
      await pool.close();
    }
  });

  it('with an encoder lane, a network call does not wait behind a pretrained encoder\'s windows (without one it does)', async () => {
    const encoder = loadEncoder(path.join(packageRoot(), 'models'), 'campplus_int8', 'pool.test.ts');
    const sp = reg.get('speech');
    const rnd = seededRandom(11);
    const window = (): Float32Array => Float32Array.from({ length: encoder.pcmFloats }, () => 0.1 * (rnd() - 0.5));
    const order = async (encoderLanes: number): Promise<string[]> => {
      const pool = new InferencePool({ size: 1, maxBatch: 64, encoderLanes });
      try {
        await pool.load([sp, encoder]); // sessions opened (each on the workers that may run it)
        const done: string[] = [];
        // eight windows (two calls of max_batch 4) queue first, then one step of the speech network
        const embedded = Promise.all(Array.from({ length: 8 }, () => pool.runEncoder(encoder, window()))).then(() => void done.push('encoder'));
        const stepped = pool.run(sp, randomFeatures(1, 3), 1).then(() => void done.push('network'));
        await Promise.all([embedded, stepped]);
        assert.equal(pool.stats.encoderWindows, 8);
        return done;
      } finally {
        await pool.close();
      }
    };
    assert.deepEqual(await order(1), ['network', 'encoder'], 'the lane runs the encoder; the network call runs meanwhile on its own worker');
    assert.deepEqual(await order(0), ['encoder', 'network'], 'one worker for both: the network call waits for the windows queued ahead of it');
  });

  it('rejects a negative or fractional number of encoder lanes', () => {
    assert.throws(() => new InferencePool({ encoderLanes: -1 }), /encoder lanes/);
    assert.throws(() => new InferencePool({ encoderLanes: 1.5 }), /encoder lanes/);
  });
});
