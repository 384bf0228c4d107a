/**
 * Streams given no count (free-recluster.ts, speakers 1.8.0): once enough windows arrived, the recent
 * windows are clustered as a file's and mapped onto the ids already sent (greedyMapping), so a voice
 * keeps its number, a new voice gets the next one, and one voice split by the first windows is given one
 * id from then on. The real-embedding cases are in golden.test.ts.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { normalise, OnlineSpeakers } from '../../src/speakers/clustering';
import { FreeReclusteringSpeakers, greedyMapping } from '../../src/speakers/free-recluster';
import type { SpeakerMapInfo } from '../../src/speakers/manifest';
import type { EncoderInfo } from '../../src/inference/views';
import { decidedHere } from './decided-here';

function info(freeMinWindows: number, centre = false): SpeakerMapInfo {
  return {
    encoder: { windowSteps: 25 } as EncoderInfo,
    schedule: { windowSteps: 25, hopSteps: 12, every: 1, minVoicedSteps: 1, gateDb: -50 },
    params: {
      hopSteps: 12, windowSteps: 25, segmentThreshold: 0.6, mergeThreshold: 0.5, refineIterations: 2,
      minSpeakerS: 1, minSpeakerShare: 0.1, temperature: 3, onlineThreshold: 0.9, onlineThresholdStep: 0,
    },
    defaultMaxSpeakers: 4,
    centre,
    recluster: { maxSpeakers: 2, minWindows: 8, every: 4, history: 64, freeMinWindows, freeEvery: 4 },
    provisionalLookaheadSteps: 0,
  };
}

/** A voice: a fixed direction in 8 dimensions plus a little noise (deterministic); `drift` tilts it. */
function voice(axis: number, i: number, drift = 0): Float64Array {
  const v = new Float64Array(8).fill(0.05);
  v[axis] = 1;
  v[(axis + 3 + (i % 4)) % 8]! += 0.1 * ((i * 7) % 5) / 5;
  v[7] += drift;
  return normalise(v);
}

describe('greedyMapping', () => {
  it('maps the most agreeing pair first, one-to-one, and numbers clusters with no past id next', () => {
    // cluster 0 had id 1 on 3 windows, cluster 1 had id 0 on 2; cluster 2 is new
    assert.deepEqual(greedyMapping([0, 0, 0, 1, 1], [1, 1, 1, 0, 0], 3, 2, 10), [1, 0, 2]);
    // both clusters agree most with id 0: the larger agreement wins it, the other takes a new id
    assert.deepEqual(greedyMapping([0, 1, 1], [0, 0, 0], 2, 1, 10), [1, 0]);
    // ties: the lowest cluster first, then the lowest id
    assert.deepEqual(greedyMapping([0, 1], [0, 0], 2, 1, 10), [0, 1]);
    // new ids never pass the cap
    assert.deepEqual(greedyMapping([], [], 3, 1, 2), [1, 1, 1]);
  });
});

describe('FreeReclusteringSpeakers (no count)', () => {
  it('decides the first windows one at a time, then follows the clustering, keeping the ids sent', () => {
    const turns = [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 0, 0, 1, 1, 2, 2, 2];
    const map = info(6);
    const r = new FreeReclusteringSpeakers({ ...map, recluster: { ...map.recluster, freeEvery: 1 } }, 4);
    const got = turns.map((axis, i) => decidedHere(r.add(voice(axis, i), i, voice(axis, i))).speaker);
    // a new voice's first window is no speaker yet (under min_speaker_s): it joins the closest known one
    const expected = turns.map((axis, i) => (i === turns.indexOf(2) ? 1 : axis));
    assert.deepEqual(got, expected);
    assert.equal(r.count, 3);
  });

  it('gives one voice one id once it re-clusters, where one window at a time had split it', () => {
    // one voice whose windows drift: one at a time (a high bar) opens a second speaker for the drifted ones
    const turns = Array.from({ length: 40 }, (_, i) => i);
    const windows = turns.map((i) => voice(0, i, i % 2 === 0 ? 0 : 0.6));
    const online = new OnlineSpeakers(info(8).params, 4);
    const split = windows.map((e) => online.add(e).speaker);
    assert.ok(new Set(split.slice(20)).size > 1, 'one window at a time splits the voice');
    const r = new FreeReclusteringSpeakers(info(8), 4);
    const ids = windows.map((e, i) => decidedHere(r.add(e, i, e)).speaker);
    assert.deepEqual(new Set(ids.slice(8)).size, 1, `after the first clustering one id: ${ids.join(',')}`);
  });

  it('re-clusters every freeEvery windows, whatever the two-party streams\' period', () => {
    // voice 0 for 10 windows, then voice 1: the first clustering (window 6) knows only voice 0
    const turns = [...new Array<number>(10).fill(0), ...new Array<number>(10).fill(1)];
    const ids = (every: number, freeEvery: number): number[] => {
      const map = info(6);
      const r = new FreeReclusteringSpeakers({ ...map, recluster: { ...map.recluster, every, freeEvery } }, 4);
      return turns.map((axis, i) => decidedHere(r.add(voice(axis, i), i, voice(axis, i))).speaker);
    };
    assert.deepEqual(ids(1000, 1).slice(12), new Array<number>(8).fill(1), 'the new voice gets its id once clustered');
    assert.deepEqual(ids(1, 1000).slice(10), new Array<number>(10).fill(0), 'no re-clustering: it keeps the only centroid');
  });

  it('probabilities sum to 1 over the ids and favour the window\'s id', () => {
    const r = new FreeReclusteringSpeakers(info(5, true), 4);
    for (let i = 0; i < 40; i++) {
      const e = voice(Math.floor(i / 5) % 2, i);
      const { speaker, probs } = decidedHere(r.add(e, i, e));
      assert.ok(probs.length <= 4);
      assert.ok(Math.abs(probs.reduce((a, b) => a + b, 0) - 1) < 1e-9);
      assert.equal(probs.indexOf(Math.max(...probs)), speaker);
    }
  });
});
