/**
 * Streams told num_speakers (recluster.ts): the re-clustering keeps the ids already sent, numbers a
 * new voice next, and keeps at most `history` windows. The real-embedding cases are in golden.test.ts.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { normalise, type SpeakerMapParams } from '../../src/speakers/clustering';
import { overlapMapping, ReclusteringSpeakers } from '../../src/speakers/recluster';
import type { RecentWindows } from '../../src/speakers/recent-windows';
import { decidedHere } from './decided-here';

const params: SpeakerMapParams = {
  hopSteps: 12, windowSteps: 25, segmentThreshold: 0.6, mergeThreshold: 0.15, refineIterations: 2,
  minSpeakerS: 1, minSpeakerShare: 0.2, temperature: 3, onlineThreshold: 0.7, onlineThresholdStep: 0,
};

/** A voice: a fixed direction in 8 dimensions plus a little noise (deterministic). */
function voice(axis: number, i: number): Float64Array {
  const v = new Float64Array(8).fill(0.05);
  v[axis] = 1;
  v[(axis + 3 + (i % 4)) % 8]! += 0.1 * ((i * 7) % 5) / 5;
  return normalise(v);
}

describe('overlapMapping', () => {
  it('maps each cluster to the id most of its past windows had, one-to-one', () => {
    assert.deepEqual(overlapMapping([0, 0, 1, 1, 1], [1, 1, 0, 0, 1], 2, 2), [1, 0]);
    assert.deepEqual(overlapMapping([0, 0, 0], [0, 0, 0], 2, 2), [0, 1]); // a cluster with no past: the free id
    assert.deepEqual(overlapMapping([], [], 1, 2), [0]);
  });
});

describe('ReclusteringSpeakers (num_speakers 2)', () => {
  it('keeps speaker 1 on the first voice, numbers the second voice 2, and follows the turns', () => {
    const r = new ReclusteringSpeakers(params, { maxSpeakers: 2, minWindows: 4, every: 2, history: 16, freeMinWindows: 0, freeEvery: 8 }, 2);
    const turns = [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1];
    const got = turns.map((axis, i) => decidedHere(r.add(voice(axis, i), i)).speaker);
    assert.deepEqual(got, turns);
    assert.equal(r.count, 2);
  });

  it('probabilities over the two ids sum to 1 and favour the window\'s speaker', () => {
    const r = new ReclusteringSpeakers(params, { maxSpeakers: 2, minWindows: 3, every: 1, history: 8, freeMinWindows: 0, freeEvery: 8 }, 2);
    for (let i = 0; i < 30; i++) {
      const axis = Math.floor(i / 5) % 2;
      const { speaker, probs } = decidedHere(r.add(voice(axis, i), i));
      assert.equal(probs.length <= 2, true);
      assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 1) < 1e-9);
      assert.equal(probs.indexOf(Math.max(...probs)), speaker);
    }
  });

  it('keeps at most `history` windows however long the stream', () => {
    const r = new ReclusteringSpeakers(params, { maxSpeakers: 2, minWindows: 4, every: 4, history: 10, freeMinWindows: 0, freeEvery: 8 }, 2);
    for (let i = 0; i < 200; i++) r.add(voice(Math.floor(i / 7) % 2, i), i);
    const kept = (r as unknown as { recent: RecentWindows }).recent;
    assert.ok(kept.windows.length <= 10 && kept.ids.length === kept.windows.length && kept.compared.length === kept.windows.length);
    assert.equal(kept.seen, 200);
  });
});
