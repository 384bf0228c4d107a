/**
 * The speaker map's arithmetic (src/speakers/clustering.ts, alike-merge.ts) on made-up embeddings, and the encoder
 * stage's overlapping windows: which steps each window holds, and that chunking does not matter.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { centredOn, clusterWindows, normalise, OnlineSpeakers, stepProbabilities, type SpeakerMapParams } from '../../src/speakers/clustering';
import { whiten } from '../../src/speakers/whitening';
import { EncoderStage, type WindowOutcome } from '../../src/inference/encoder-stage';
import { STEP_SAMPLES } from '../../src/inference/views';
import { keepApartBy, mergeAlike, type AlikeMergeRule } from '../../src/speakers/alike-merge';

const params: SpeakerMapParams = {
  hopSteps: 12,
  windowSteps: 25,
  segmentThreshold: 0.8,
  mergeThreshold: 0.7,
  refineIterations: 2,
  minSpeakerS: 2,
  minSpeakerShare: 1,
  temperature: 10,
  onlineThreshold: 0.7,
  onlineThresholdStep: 0,
};

/** A unit vector near axis `axis` of a 16-d space (noise `jitter` on the other axes, deterministic). */
function voice(axis: number, seed: number, jitter = 0.15): Float64Array {
  const v = new Float64Array(16);
  let x = seed * 9301 + 49297;
  for (let i = 0; i < 16; i++) {
    x = (x * 9301 + 49297) % 233280;
    v[i] = (x / 233280 - 0.5) * jitter;
  }
  v[axis] = 1;
  return normalise(v);
}

describe('file clustering', () => {
  // speaker A (axis 0) windows 0-9, B (axis 1) 10-19, A again 22-31, a 2-window blip of C (axis 2) at 40-41
  const windows = [
    ...Array.from({ length: 10 }, (_, i) => ({ window: i, embedding: voice(0, i) })),
    ...Array.from({ length: 10 }, (_, i) => ({ window: 10 + i, embedding: voice(1, 100 + i) })),
    ...Array.from({ length: 10 }, (_, i) => ({ window: 22 + i, embedding: voice(0, 200 + i) })),
    { window: 40, embedding: voice(2, 300) },
    { window: 41, embedding: voice(2, 301) },
  ];

  it('finds the two speakers, numbered by first appearance, and dissolves a blip shorter than min_speaker_s', () => {
    const c = clusterWindows(windows, params, 10);
    assert.equal(c.speakers, 2);
    assert.deepEqual(c.assignment.slice(0, 30), [...Array(10).fill(0), ...Array(10).fill(1), ...Array(10).fill(0)]);
  });

  it('keeps the blip as a third speaker when min_speaker_s allows it', () => {
    const c = clusterWindows(windows, { ...params, minSpeakerS: 0 }, 10);
    assert.equal(c.speakers, 3);
    assert.deepEqual(c.assignment.slice(30), [2, 2]);
  });

  it('num_speakers fixes the count; max_speakers caps it', () => {
    assert.equal(clusterWindows(windows, params, 10, 1).speakers, 1);
    assert.equal(clusterWindows(windows, { ...params, minSpeakerS: 0 }, 10, 3).speakers, 3);
    assert.equal(clusterWindows(windows, { ...params, minSpeakerS: 0 }, 2).speakers, 2);
  });

  it('no windows: no speakers', () => {
    assert.deepEqual(clusterWindows([], params, 10), { speakers: 0, assignment: [], centroids: [] });
  });
});

describe('vector helpers writing into a given array (scratch arrays of the clustering)', () => {
  it('normalise, centredOn and whiten give the same numbers into a scratch, in place, or new', () => {
    const e = voice(2, 5);
    const mean = normalise(voice(7, 3));
    const m = Array.from({ length: 16 }, (_, r) => voice(r, r + 11, 0.4));
    const scratch = new Float64Array(16).fill(9);
    const raw = Float64Array.from(e, (x, i) => x * (i + 1));
    assert.deepEqual(normalise(raw, scratch), normalise(raw));
    const inPlace = Float64Array.from(raw);
    assert.equal(normalise(inPlace, inPlace), inPlace);
    assert.deepEqual(inPlace, normalise(raw));
    scratch.fill(9);
    assert.deepEqual(centredOn(e, mean, scratch), centredOn(e, mean));
    assert.equal(centredOn(e, mean, scratch), scratch);
    scratch.fill(9);
    const w = whiten(m, e);
    assert.deepEqual(whiten(m, e, scratch), w);
    assert.equal(whiten(m, e, scratch), scratch);
    let n = 0;
    for (const x of w) n += x * x;
    assert.ok(Math.abs(n - 1) < 1e-12, 'unit length');
    assert.deepEqual(normalise(new Float64Array(4), new Float64Array(4).fill(3)), new Float64Array(4), 'zeros stay zeros');
  });
});

describe('online speakers', () => {
  it('numbers a new voice at once and never renumbers a known one', () => {
    const o = new OnlineSpeakers(params, 10);
    const seq = [voice(0, 1), voice(0, 2), voice(1, 3), voice(0, 4), voice(2, 5), voice(1, 6)];
    assert.deepEqual(seq.map((e) => o.add(e).speaker), [0, 0, 1, 0, 2, 1]);
    assert.equal(o.count, 3);
  });

  it('each further speaker needs a window further from the known ones (onlineThresholdStep)', () => {
    // a window at cosine 0.66 from the closest known speaker: a new speaker at the fixed threshold 0.7 whatever the
    // count, but with a step of 0.03 the bar is 0.7 / 0.67 / 0.64 with 1 / 2 / 3 speakers known
    const unit = (...xs: number[]): Float64Array => normalise(Float64Array.from(xs));
    const known = [unit(1, 0, 0, 0), unit(0, 1, 0, 0), unit(0, 0, 1, 0)];
    const near = (k: number): Float64Array => {
      const v = new Float64Array(4);
      v[k] = 0.66;
      v[3] = Math.sqrt(1 - 0.66 * 0.66);
      return v;
    };
    const run = (step: number, speakersKnown: number): number => {
      const o = new OnlineSpeakers({ ...params, onlineThresholdStep: step }, 10);
      for (const e of known.slice(0, speakersKnown)) o.add(e);
      return o.add(near(0)).speaker;
    };
    assert.deepEqual([1, 2, 3].map((n) => run(0, n)), [1, 2, 3], 'fixed threshold: always a new speaker');
    assert.deepEqual([1, 2, 3].map((n) => run(0.03, n)), [1, 2, 0], 'lowered bar: joins speaker 1 once three are known');
    const o = new OnlineSpeakers({ ...params, onlineThresholdStep: 0.03 }, 10);
    assert.equal(o.bar(), 0.7);
    for (const e of known) o.add(e);
    assert.ok(Math.abs(o.bar() - 0.64) < 1e-12);
  });

  it('at max_speakers a new voice joins the closest speaker', () => {
    const o = new OnlineSpeakers(params, 2);
    assert.deepEqual([voice(0, 1), voice(1, 2), voice(2, 3)].map((e) => o.add(e).speaker).slice(0, 2), [0, 1]);
    assert.equal(o.count, 2);
  });
});

describe('step probabilities', () => {
  const p = { hopSteps: 12, windowSteps: 25 };
  const w = (window: number, probs: number[]) => ({ window, probs });

  it('averages the windows covering a step; gaps take the latest window, files look ahead before the first', () => {
    // windows 1 (steps 12-36) and 2 (24-48); nothing covers 0-11 or 49-59
    const out = stepProbabilities([w(1, [1, 0]), w(2, [0, 1])], 60, 2, p, true);
    const at = (s: number): number[] => [out[2 * s]!, out[2 * s + 1]!];
    assert.deepEqual(at(0), [1, 0]); // look-ahead to window 1
    assert.deepEqual(at(20), [1, 0]);
    assert.deepEqual(at(30), [0.5, 0.5]);
    assert.deepEqual(at(40), [0, 1]);
    assert.deepEqual(at(55), [0, 1]); // the latest window
    const live = stepProbabilities([w(1, [1, 0])], 12, 2, p, false);
    assert.deepEqual([...live], new Array(24).fill(0)); // streams: nothing before the first window
  });
});

describe('encoder stage with overlapping windows', () => {
  const schedule = { windowSteps: 25, hopSteps: 12, every: 1, minVoicedSteps: 8, gateDb: -50 };

  async function run(steps: number, chunk: number, voiced: (s: number) => boolean): Promise<{ outcomes: string[]; firstSample: number[] }> {
    const levels = Float32Array.from({ length: steps }, (_, s) => (voiced(s) ? -20 : -90));
    const pcm = new Float32Array(steps * STEP_SAMPLES);
    for (let s = 0; s < steps; s++) pcm.fill(s + 1, s * STEP_SAMPLES, (s + 1) * STEP_SAMPLES);
    const outcomes: WindowOutcome[] = [];
    const firstSample: number[] = [];
    const stage = new EncoderStage({
      schedule,
      embed: async (x) => {
        assert.equal(x.length, 25 * STEP_SAMPLES);
        firstSample.push(x[0]!);
        return [Float32Array.of(x[0]!)];
      },
      onWindow: (o) => void outcomes.push(o),
    });
    for (let s = 0; s < steps; s += chunk) {
      const n = Math.min(chunk, steps - s);
      void stage.push(levels.subarray(s, s + n), pcm.subarray(s * STEP_SAMPLES, (s + n) * STEP_SAMPLES), n);
    }
    await stage.end();
    return { outcomes: outcomes.map((o) => `${o.window}:${o.kind}`), firstSample };
  }

  it('window k holds steps [12k, 12k + 25), the last ones padded, whatever the chunking', async () => {
    // 70 steps: windows start at 0, 12, 24, 36, 48, 60; steps 30-44 are silent
    const voiced = (s: number): boolean => s < 30 || s >= 45;
    const a = await run(70, 1, voiced);
    const b = await run(70, 33, voiced);
    assert.deepEqual(a, b);
    // window 1 (12-36): 18 voiced; window 2 (24-48): 6 + 4 = 10 voiced; window 3 (36-60): 15; window 5 (60-69): 10
    assert.deepEqual(a.outcomes, ['0:embedded', '1:embedded', '2:embedded', '3:embedded', '4:embedded', '5:embedded']);
    assert.deepEqual(a.firstSample, [1, 13, 25, 37, 49, 61]);
    const quiet = await run(70, 5, (s) => s < 20);
    assert.deepEqual(quiet.outcomes, ['0:embedded', '1:embedded', '2:none', '3:none', '4:none', '5:none']);
  });
});

describe('agglomeration with cached closest clusters', () => {
  /** The plain all-pairs agglomeration the cache must reproduce (merge while the best cosine >= tau). */
  function naive(emb: Float64Array[], tau: number): number[][] {
    const list = emb.map((_, i) => [i]);
    const centroid = (m: number[]): Float64Array => {
      const s = new Float64Array(emb[0]!.length);
      for (const i of m) for (let d = 0; d < s.length; d++) s[d]! += emb[i]![d]!;
      return normalise(s);
    };
    for (;;) {
      let best = -Infinity;
      let ba = -1;
      let bb = -1;
      for (let a = 0; a < list.length; a++) {
        for (let b = a + 1; b < list.length; b++) {
          let s = 0;
          const ca = centroid(list[a]!);
          const cb = centroid(list[b]!);
          for (let d = 0; d < ca.length; d++) s += ca[d]! * cb[d]!;
          if (s > best) [best, ba, bb] = [s, a, b];
        }
      }
      if (list.length < 2 || best < tau) return list;
      list[ba] = [...list[ba]!, ...list[bb]!].sort((x, y) => x - y);
      list.splice(bb, 1);
    }
  }

  it('merges exactly as the all-pairs search does', () => {
    for (const seed of [1, 2, 3]) {
      // 40 windows of 5 voices, every window its own segment (not consecutive), no refinement or dissolving
      const emb = Array.from({ length: 40 }, (_, i) => voice((i * 7 + seed) % 5, seed * 1000 + i, 0.9));
      const windows = emb.map((embedding, i) => ({ window: 2 * i, embedding }));
      for (const tau of [0.3, 0.6, 0.8]) {
        const got = clusterWindows(windows, { ...params, mergeThreshold: tau, refineIterations: 0, minSpeakerS: 0 }, 40);
        const want = naive(emb, tau);
        const groups = Array.from({ length: got.speakers }, (_, k) => got.assignment.flatMap((a, i) => (a === k ? [i] : [])));
        assert.deepEqual(groups.map((g) => g.join(',')).sort(), want.map((g) => g.join(',')).sort(), `seed ${seed}, tau ${tau}`);
      }
    }
  });

  /** Clusters of the agglomeration alone (every window its own segment, no refinement, none too short). */
  const agglomerated = (emb: Float64Array[], tau: number): string[] => {
    const got = clusterWindows(
      emb.map((embedding, i) => ({ window: 2 * i, embedding })),
      { ...params, mergeThreshold: tau, refineIterations: 0, minSpeakerS: 0 },
      emb.length,
    );
    return Array.from({ length: got.speakers }, (_, k) => got.assignment.flatMap((a, i) => (a === k ? [i] : [])).join(',')).sort();
  };

  it('breaks exact ties as the all-pairs search does (lowest pair first)', () => {
    // 0/1 vectors in 6 dimensions: many pairs at exactly the same cosine
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      let x = seed;
      const uniform = (): number => (x = (x * 16807) % 2147483647) / 2147483647;
      const emb = Array.from({ length: 60 }, () => {
        const v = Float64Array.from({ length: 6 }, () => (uniform() < 0.4 ? 1 : 0));
        if (!v.includes(1)) v[0] = 1;
        return normalise(v);
      });
      for (const tau of [0.3, 0.5, 0.65, 0.8]) assert.deepEqual(agglomerated(emb, tau), naive(emb, tau).map((g) => g.join(',')).sort(), `seed ${seed}, tau ${tau}`);
    }
  });

  it('also when windows are so unlike that one growing cluster is the closest of most others', () => {
    // the case whose rescans grew as n^1.8 before the bounds (Müllner's generic algorithm): almost random windows merged far down
    for (const seed of [4, 5]) {
      const emb = Array.from({ length: 120 }, (_, i) => voice(i % 4, seed * 1000 + i, 4));
      for (const tau of [-0.2, 0.1, 0.4]) {
        const want = naive(emb, tau);
        assert.ok(want.length < 60, `merged far down (${want.length} clusters)`);
        assert.deepEqual(agglomerated(emb, tau), want.map((g) => g.join(',')).sort(), `seed ${seed}, tau ${tau}`);
      }
    }
  });
});

describe("files' alike merge (alike-merge.ts)", () => {
  // identity whitening: the whitened view is the plain one; 4-d unit axes keep the cosines exact
  const identity = Array.from({ length: 4 }, (_, i) => Float64Array.from({ length: 4 }, (_, j) => (i === j ? 1 : 0)));
  const e = (i: number): Float64Array => identity[i]!;
  const mixed = normalise(Float64Array.from([0.8, 0.6, 0, 0]));
  // speakers 0 and 2 apart, 1 between them (cosines 0.8 and 0.6), 3 elsewhere; speaker 0 and 2 hold two windows
  const plain = [e(0), e(0), mixed, e(1), e(1), e(2)];
  const assignment = [0, 0, 1, 2, 2, 3];
  const rule = (weights: number[], maxWindows = 100): AlikeMergeRule => ({ bias: -0.5, weights, minLogit: 0, maxWindows });

  it('joins speakers the rule calls one voice, also through another, ordered by first window', () => {
    const merged = mergeAlike(assignment, 4, plain, plain, identity, rule([1, 0, 0, 0]));
    assert.equal(merged.length, 2);
    assert.deepEqual([...merged[1]!], [0, 0, 1, 0]);
  });

  it("weighs the speakers' sizes, counted up to maxWindows", () => {
    // the larger speaker's log size (log 2) pulls both merges under the bar ...
    assert.equal(mergeAlike(assignment, 4, plain, plain, identity, rule([1, 0, 0, -1])).length, 4);
    // ... unless sizes count up to one window, where every log size is 0
    assert.equal(mergeAlike(assignment, 4, plain, plain, identity, rule([1, 0, 0, -1], 1)).length, 2);
  });

  it('reads the compared (clustered) view through its own weight', () => {
    const apart = [e(3), e(3), e(2), e(0), e(0), e(1)];
    assert.equal(mergeAlike(assignment, 4, plain, apart, identity, rule([0, 1, 0, 0])).length, 4);
    assert.equal(mergeAlike(assignment, 4, apart, plain, identity, rule([0, 1, 0, 0])).length, 2);
  });
});

describe('the agglomeration keeps apart long clusters the rule calls two voices (keepApartBy)', () => {
  const identity = Array.from({ length: 4 }, (_, i) => Float64Array.from({ length: 4 }, (_, j) => (i === j ? 1 : 0)));
  // clustered (compared) view: A and B alike (cosine 0.92, over the merge threshold); plain view: A on axis 2, B on axis 3
  const compareA = normalise(Float64Array.from([1, 0.1, 0, 0]));
  const compareB = normalise(Float64Array.from([1, -0.3, 0, 0]));
  const runs: [number, 'A' | 'B'][] = [[0, 'A'], [10, 'B'], [20, 'A']]; // three segments of 5 windows (3.8 s each)
  const windows = runs.flatMap(([start, who]) => Array.from({ length: 5 }, (_, i) => ({ window: start + i, embedding: who === 'A' ? compareA : compareB })));
  const plain = runs.flatMap(([, who]) => Array.from({ length: 5 }, () => identity[who === 'A' ? 2 : 3]!));
  // one voice when -0.5 + the whitened cosine >= 0; kept apart under logit(0.4)
  const rule: AlikeMergeRule = { bias: -0.5, weights: [1, 0, 0, 0], minLogit: 0, maxWindows: 100, apartLogit: Math.log(0.4 / 0.6) };
  const keepApart = keepApartBy(rule, identity, plain);

  it('without it one speaker; with it A and B stay apart while the two runs of A still merge', () => {
    assert.equal(clusterWindows(windows, params, 10).speakers, 1);
    const c = clusterWindows(windows, params, 10, undefined, keepApart);
    assert.equal(c.speakers, 2);
    assert.deepEqual(c.assignment, [...Array(5).fill(0), ...Array(5).fill(1), ...Array(5).fill(0)]);
  });

  it('clusters too short to be a speaker merge anyway, and a caller-given count is not overridden', () => {
    assert.equal(clusterWindows(windows, { ...params, minSpeakerS: 10 }, 10, undefined, keepApart).speakers, 1);
    assert.equal(clusterWindows(windows, params, 10, 1, keepApart).speakers, 1);
  });

  it('a rule without keep_apart_below gives no KeepApart', () => {
    const { apartLogit: _unused, ...without } = rule;
    assert.equal(keepApartBy(without, identity, plain), undefined);
  });

  describe('a short cluster the rule calls another voice than every speaker is a speaker too (speakers 1.9.2)', () => {
    // C: 5 windows (3.8 s, under minSpeakerS 5) far from A in the clustered view (cosine 0.36), so it stays its own
    // cluster; plain views on axes 2 and 3: logit -0.5 (probability 0.38 of one voice)
    const compareC = normalise(Float64Array.from([0.5, -1, 0, 0]));
    const shortRuns = runs.map(([start, who]) => [start, who === 'B' ? 'C' : who] as const);
    const shortWindows = shortRuns.flatMap(([start, who]) => Array.from({ length: 5 }, (_, i) => ({ window: start + i, embedding: who === 'A' ? compareA : compareC })));
    const p5 = { ...params, minSpeakerS: 5 };
    const withShort = (below: number, minS: number): AlikeMergeRule => ({ ...rule, shortSpeaker: { minS, belowLogit: Math.log(below / (1 - below)) } });

    it('under short_speaker_below it is a speaker; at or over it, or shorter than short_speaker_min_s, it joins the closest', () => {
      assert.equal(clusterWindows(shortWindows, p5, 10, undefined, keepApart).speakers, 1, 'no short-speaker rule: C joins A');
      const c = clusterWindows(shortWindows, p5, 10, undefined, keepApartBy(withShort(0.45, 2), identity, plain));
      assert.equal(c.speakers, 2);
      assert.deepEqual(c.assignment, [...Array(5).fill(0), ...Array(5).fill(1), ...Array(5).fill(0)]);
      assert.equal(clusterWindows(shortWindows, p5, 10, undefined, keepApartBy(withShort(0.3, 2), identity, plain)).speakers, 1, 'probability 0.38 is not under 0.3');
      assert.equal(clusterWindows(shortWindows, p5, 10, undefined, keepApartBy(withShort(0.45, 4), identity, plain)).speakers, 1, '3.8 s is under 4 s');
    });

    it('a caller-given count is not overridden', () => {
      assert.equal(clusterWindows(shortWindows, p5, 10, 1, keepApartBy(withShort(0.45, 2), identity, plain)).speakers, 1);
    });
  });
});
