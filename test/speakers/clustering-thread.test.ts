/**
 * The speaker map's clusterings on their own thread (clustering-thread.ts): the same answer as on
 * the calling thread, the main event loop free meanwhile, bad input a clear error that leaves the
 * thread usable. The golden cases on the threads are in golden.test.ts.
 */
import { strict as assert } from 'node:assert';
import fs from 'node:fs';
import { after, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { countTerminations } from '../worker-terminations';
import { AurisError } from '../../src/errors';
import { normalise, type EmbeddedWindow } from '../../src/speakers/clustering';
import { ClusteringThread } from '../../src/speakers/clustering-thread';
import { packWindows, WindowStore } from '../../src/speakers/clustering-protocol';
import { speakersOfFile } from '../../src/speakers/file-map';
import { freeClusters } from '../../src/speakers/free-recluster';
import { countedClusters } from '../../src/speakers/recluster';
import type { SpeakerMapInfo } from '../../src/speakers/manifest';
import type { EncoderInfo } from '../../src/inference/views';

const HOP = 6;

function info(): SpeakerMapInfo {
  return {
    encoder: { windowSteps: 25 } as EncoderInfo,
    schedule: { windowSteps: 25, hopSteps: HOP, every: 1, minVoicedSteps: 1, gateDb: -50 },
    params: {
      hopSteps: HOP, windowSteps: 25, segmentThreshold: 0.6, mergeThreshold: 0.3, refineIterations: 2,
      minSpeakerS: 1, minSpeakerShare: 0.05, temperature: 10, onlineThreshold: 0.5, onlineThresholdStep: 0,
    },
    defaultMaxSpeakers: 6,
    centre: true,
    recluster: { maxSpeakers: 2, minWindows: 8, every: 4, history: 64, freeMinWindows: 16, freeEvery: 4 },
    provisionalLookaheadSteps: 0,
  };
}

/** `n` windows of `voices` voices taking turns of 40 windows: a direction in 32 dimensions plus deterministic noise. */
function conversation(n: number, voices: number): EmbeddedWindow[] {
  let seed = 7;
  const noise = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647 - 0.5) * 0.5;
  return Array.from({ length: n }, (_, i) => {
    const v = Float64Array.from({ length: 32 }, noise);
    v[Math.floor(i / 40) % voices]! += 1;
    return { window: i, embedding: normalise(v) };
  });
}

describe('ClusteringThread', () => {
  const thread = new ClusteringThread('test');
  after(() => thread.close());

  it("gives a file's speakers exactly as the calling thread does, the main event loop turning meanwhile", async () => {
    const windows = conversation(2400, 4);
    const steps = 2400 * HOP + 25;
    const speech = new Uint8Array(steps).fill(1);
    const here = speakersOfFile(info(), windows, steps, speech);
    assert.equal(here.keys.length, 4);
    let turns = 0;
    let done = false;
    const spin = (): void => {
      turns++;
      if (!done) setImmediate(spin);
    };
    setImmediate(spin);
    const there = await thread.file(info(), packWindows(windows), steps, speech);
    done = true;
    assert.deepEqual(there.keys, here.keys);
    assert.deepEqual(there.probs, here.probs);
    for (let k = 0; k < here.keys.length; k++) assert.deepEqual(there.embeddings.mean(k), here.embeddings.mean(k));
    // on the calling thread the loop would not turn at all while the clustering ran
    assert.ok(turns >= 10, `the event loop turned ${turns} times while the thread clustered`);
  });

  it("re-clusters a stream's windows (without a count, told one) exactly as the calling thread does", async () => {
    const windows = conversation(64, 3);
    const whitened = windows.map((w) => w.embedding.map((x) => -x));
    assert.deepEqual(await thread.free(info(), 4, windows, whitened), freeClusters(windows, info(), 4, whitened));
    assert.deepEqual(await thread.free(info(), 4, windows), freeClusters(windows, info(), 4));
    assert.deepEqual(await thread.counted(info(), 2, windows), countedClusters(windows, info().params, 2));
  });

  it("hands a file's windows over from its store (chunks of 1024 rows), leaving the store empty", async () => {
    const windows = conversation(2500, 3);
    const store = new WindowStore();
    for (const w of windows) store.push(w.window, w.embedding);
    assert.deepEqual(store.windows(), windows);
    const steps = 2500 * HOP + 25;
    const speech = new Uint8Array(steps).fill(1);
    const there = await thread.file(info(), store.take(), steps, speech);
    assert.deepEqual(store.windows(), []);
    assert.deepEqual(there.probs, speakersOfFile(info(), windows, steps, speech).probs);
  });

  it('answers a failure with INFERENCE_FAILED and stays usable', async () => {
    const windows = conversation(50, 2);
    await assert.rejects(thread.file({} as SpeakerMapInfo, packWindows(windows), 400, new Uint8Array(400)), (e: AurisError) => e.code === 'INFERENCE_FAILED' && /speaker clustering \(test\) failed/.test(e.message));
    const speech = new Uint8Array(50 * HOP + 25).fill(1);
    const again = await thread.file(info(), packWindows(windows), speech.length, speech);
    assert.deepEqual(again.probs, speakersOfFile(info(), windows, speech.length, speech).probs);
  });

  it("ends its work on a cancelled file job: the call fails ABORTED, an idle thread stops, other calls keep their answers", async () => {
    const files = new ClusteringThread('files', true);
    try {
      const windows = conversation(2400, 4);
      const speech = new Uint8Array(2400 * HOP + 25).fill(1);
      const job = new AbortController();
      const cancelled = files.file(info(), packWindows(windows), speech.length, speech, {}, job.signal);
      assert.ok(files.running);
      job.abort();
      await assert.rejects(cancelled, (e: AurisError) => e.code === 'ABORTED' && /speaker clustering \(files\) cancelled/.test(e.message));
      assert.equal(files.running, false, 'the thread no one waits on is ended, not left to finish');
      // a cancelled call among others: the others are answered as before
      const other = conversation(200, 2);
      const otherSpeech = new Uint8Array(200 * HOP + 25).fill(1);
      const second = new AbortController();
      const kept = files.file(info(), packWindows(other), otherSpeech.length, otherSpeech);
      const dropped = files.file(info(), packWindows(windows), speech.length, speech, {}, second.signal);
      second.abort();
      await assert.rejects(dropped, (e: AurisError) => e.code === 'ABORTED');
      assert.deepEqual((await kept).probs, speakersOfFile(info(), other, otherSpeech.length, otherSpeech).probs);
      // already cancelled: refused before any work
      await assert.rejects(files.file(info(), packWindows(other), otherSpeech.length, otherSpeech, {}, AbortSignal.abort()), (e: AurisError) => e.code === 'ABORTED');
    } finally {
      await files.close();
    }
  });

  it('stops a cancelled call that is running while others wait: its thread is ended, the calls behind it go to a new one', async () => {
    const files = new ClusteringThread('files', true);
    const ended = countTerminations();
    try {
      const windows = conversation(2400, 4);
      const speech = new Uint8Array(2400 * HOP + 25).fill(1);
      const job = new AbortController();
      const running = files.file(info(), packWindows(windows), speech.length, speech, {}, job.signal);
      const other = conversation(200, 2);
      const otherSpeech = new Uint8Array(200 * HOP + 25).fill(1);
      const waiting = files.file(info(), packWindows(other), otherSpeech.length, otherSpeech);
      job.abort();
      await assert.rejects(running, (e: AurisError) => e.code === 'ABORTED');
      assert.equal(ended.count, 1, 'the thread running the cancelled call was ended, not left to finish it');
      assert.deepEqual((await waiting).probs, speakersOfFile(info(), other, otherSpeech.length, otherSpeech).probs);
      assert.equal(ended.count, 2, 'the new thread ends when idle too');
      await files.exited();
    } finally {
      ended.restore();
      await files.close();
    }
  });

  it('a thread that dies fails only the call it was running; the calls behind it are answered by a new thread', async () => {
    const files = new ClusteringThread('files', true);
    const postMessage = Worker.prototype.postMessage;
    let posts = 0;
    // the first thread dies as it gets its first call (as a crash or an out-of-memory end would)
    Worker.prototype.postMessage = function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
      postMessage.apply(this, args);
      if (posts++ === 0) void this.terminate();
    };
    try {
      const windows = conversation(400, 2);
      const speech = new Uint8Array(400 * HOP + 25).fill(1);
      const first = files.file(info(), packWindows(windows), speech.length, speech);
      const second = files.file(info(), packWindows(windows), speech.length, speech);
      await assert.rejects(first, (e: AurisError) => e.code === 'INFERENCE_FAILED' && /speaker clustering thread \(files\) exited/.test(e.message));
      assert.deepEqual((await second).probs, speakersOfFile(info(), windows, speech.length, speech).probs);
      assert.equal(posts, 2, 'the second call went to a new thread');
      await files.exited();
    } finally {
      Worker.prototype.postMessage = postMessage;
      await files.close();
    }
  });

  it('ends a files lane when idle, and exited() waits until its thread is gone (the job then gives its memory back)', async () => {
    // the process's OS threads (Linux): a worker's thread leaves this list when it has exited. Other tests' threads
    // may come and go meanwhile, so the check follows the threads that appeared with the call: the lane's is one.
    const threads = (): Set<string> => new Set(fs.readdirSync('/proc/self/task'));
    const files = new ClusteringThread('files', true);
    try {
      const before = threads();
      const windows = conversation(1200, 3);
      const speech = new Uint8Array(1200 * HOP + 25).fill(1);
      const call = files.file(info(), packWindows(windows), speech.length, speech);
      const started = [...threads()].filter((t) => !before.has(t));
      assert.ok(started.length > 0, 'the call started a thread');
      const found = await call;
      assert.equal(found.keys.length, 3);
      assert.equal(files.running, false, 'idle, so ended');
      await files.exited();
      const now = threads();
      assert.ok(started.some((t) => !now.has(t)), `the clustering thread has exited (threads started by the call: ${started.join(', ')}; still there: ${started.filter((t) => now.has(t)).join(', ')})`);
      // the next call starts a new thread and answers as before
      assert.deepEqual((await files.file(info(), packWindows(windows), speech.length, speech)).probs, found.probs);
      await files.exited();
    } finally {
      await files.close();
    }
  });

  it('fails the calls in flight when closed, and refuses work after', async () => {
    const closed = new ClusteringThread('closed');
    const windows = conversation(2000, 4);
    const speech = new Uint8Array(2000 * HOP + 25).fill(1);
    const inFlight = assert.rejects(closed.file(info(), packWindows(windows), speech.length, speech), (e: AurisError) => e.code === 'CLOSED');
    await closed.close();
    await inFlight;
    await assert.rejects(closed.free(info(), 4, conversation(20, 2)), (e: AurisError) => e.code === 'CLOSED');
  });
});
