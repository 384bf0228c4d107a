/**
 * The file job's read loop (src/pipeline/feed.ts): how far its reads run ahead of the model runners
 * and encoder stages, which is what bounds a long job's memory. A stand-in speech runner hands its
 * flags to a real speech-gated EncoderStage whose encoder answers only when the test lets it.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { FeatureChunk } from '../../src/audio/types';
import { EncoderStage } from '../../src/inference/encoder-stage';
import { StepBuffer } from '../../src/inference/step-buffer';
import { STEP_SAMPLES } from '../../src/inference/views';
import { feedRunners, type FedChannel } from '../../src/pipeline/feed';

const CHUNK = 100; // steps per read
const READS = 8;
const schedule = { windowSteps: 25, hopSteps: 25, every: 1, minVoicedSteps: 8, gateDb: -50, speechGate: { steps: 13, minSpeechSteps: 4 } };

/** Reads of CHUNK loud speech steps (with samples), counting the reads asked for. */
function frontend(): { read(): Promise<FeatureChunk[] | null>; reads: number } {
  const fe = {
    reads: 0,
    read: async (): Promise<FeatureChunk[] | null> => {
      if (fe.reads === READS) return null;
      const startStep = fe.reads++ * CHUNK;
      return [{ channel: 0, startStep, steps: CHUNK, levels: new Float32Array(CHUNK).fill(-20), features: new Float32Array(0), pcm: new Float32Array(CHUNK * STEP_SAMPLES) }];
    },
  };
  return fe;
}

/** A channel whose speech runner answers at once (every step speech) and whose gated stage's encoder answers when the test calls what `waiting` holds. */
function channel(): { st: FedChannel; waiting: (() => void)[] } {
  const waiting: (() => void)[] = [];
  const stage = new EncoderStage({
    schedule,
    embed: () => new Promise((resolve) => waiting.push(() => resolve([Float32Array.of(1)]))),
    onWindow: () => undefined,
  });
  const speech = {
    push: async (_features: Float32Array, steps: number): Promise<void> => {
      await new Promise((r) => setImmediate(r));
      stage.pushSpeech(new Uint8Array(steps).fill(1), steps);
    },
    end: async (): Promise<void> => undefined,
  };
  return { st: { channel: 0, steps: 0, levels: new StepBuffer(1, READS * CHUNK + 1), runners: [speech], stages: [stage] }, waiting };
}

describe('file read loop', () => {
  it("waits for a speech-gated stage's windows to be embedded: no more than three reads ahead of the encoder", async () => {
    const fe = frontend();
    const { st, waiting } = channel();
    const fed = feedRunners(fe, new Map([[0, st]]), READS * CHUNK, () => undefined, undefined);
    await new Promise((r) => setTimeout(r, 100));
    // the first read's windows are decided once the speech runner's flags are in, and their embeddings never come:
    // reads 1-3 are in flight, the fourth waits (waiting on the pushes' promises alone, which resolve before the
    // windows are decided, the loop read 6 of the 8 here, each read holding its samples)
    assert.equal(fe.reads, 3, `reads while the encoder is stuck: ${fe.reads}`);
    assert.ok(waiting.length > 0, 'the first windows are embedding');
    // once the encoder answers, the loop reads on to the end
    const drain = setInterval(() => waiting.splice(0).forEach((f) => f()), 1);
    try {
      await fed;
    } finally {
      clearInterval(drain);
    }
    assert.equal(fe.reads, READS);
    assert.equal(st.steps, READS * CHUNK);
  });
});
