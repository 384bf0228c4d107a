/**
 * The encoder stage (which windows a pretrained encoder runs on) and the view fusion (how its
 * head's opinion joins the network's per-step output), with a stand-in encoder: the window
 * decisions and the fused numbers must not depend on how the audio was chunked (file vs stream).
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { EncoderStage, type WindowOutcome } from '../../src/inference/encoder-stage';
import { ViewFusion } from '../../src/inference/view-fusion';
import { ChannelViews } from '../../src/inference/channel-views';
import type { ModelInfo } from '../../src/inference/registry';
import { STEP_SAMPLES, type EncoderInfo, type ModelViews } from '../../src/inference/views';

const W = 25;
const schedule = { windowSteps: W, every: 2, minVoicedSteps: 8, gateDb: -50 };

/** Levels: voiced (-20 dB) where `voiced(step)`, silent (-90 dB) elsewhere; samples encode the step index. */
function signal(steps: number, voiced: (s: number) => boolean): { levels: Float32Array; pcm: Float32Array } {
  const levels = Float32Array.from({ length: steps }, (_, s) => (voiced(s) ? -20 : -90));
  const pcm = new Float32Array(steps * STEP_SAMPLES);
  for (let s = 0; s < steps; s++) pcm.fill(s + 1, s * STEP_SAMPLES, (s + 1) * STEP_SAMPLES);
  return { levels, pcm };
}

/** Runs a stage over the signal in chunks of `chunk` steps; the stand-in embedding is [mean sample, samples seen]. */
async function stageRun(sig: { levels: Float32Array; pcm: Float32Array }, chunk: number, sparseMinVoicedSteps?: number): Promise<{ outcomes: WindowOutcome[]; embedded: number[][] }> {
  const outcomes: WindowOutcome[] = [];
  const embedded: number[][] = [];
  const stage = new EncoderStage({
    schedule,
    embed: async (pcm) => {
      assert.equal(pcm.length, W * STEP_SAMPLES);
      let sum = 0;
      for (const v of pcm) sum += v;
      await new Promise((r) => setTimeout(r, Math.random() * 3)); // out-of-order completion must not reorder
      embedded.push([sum / pcm.length]);
      return [Float32Array.of(sum / pcm.length, pcm[pcm.length - 1]!)];
    },
    onWindow: (o) => void outcomes.push(o),
    ...(sparseMinVoicedSteps !== undefined ? { sparseMinVoicedSteps } : {}),
  });
  const steps = sig.levels.length;
  for (let s = 0; s < steps; s += chunk) {
    const n = Math.min(chunk, steps - s);
    void stage.push(sig.levels.subarray(s, s + n), sig.pcm.subarray(s * STEP_SAMPLES, (s + n) * STEP_SAMPLES), n);
  }
  await stage.end();
  assert.ok(stage.done);
  return { outcomes, embedded };
}

/**
 * Pushes the signal's steps in chunks of `chunk` and the speech flags `lag` steps behind them (a
 * stream's speech lookahead); returns how many steps' flags were pushed.
 */
function feedWithLag(stage: EncoderStage, sig: { levels: Float32Array; pcm: Float32Array }, speech: Uint8Array, chunk: number, lag: number): number {
  const steps = sig.levels.length;
  let flagged = 0;
  for (let s = 0; s < steps; s += chunk) {
    const n = Math.min(chunk, steps - s);
    void stage.push(sig.levels.subarray(s, s + n), sig.pcm.subarray(s * STEP_SAMPLES, (s + n) * STEP_SAMPLES), n);
    const upTo = Math.max(0, s + n - lag);
    if (upTo > flagged) stage.pushSpeech(speech.subarray(flagged, upTo), upTo - flagged);
    flagged = Math.max(flagged, upTo);
  }
  return flagged;
}

describe('encoder stage', () => {
  // windows: 0 voiced, 1 voiced, 2 voiced, 3 silent, 4 voiced (9 voiced steps), 5 partial (10 steps, voiced)
  const sig = signal(5 * W + 10, (s) => s < 3 * W || (s >= 4 * W && s < 4 * W + 9) || s >= 5 * W);

  it('embeds the first window of each voiced run and every `every`-th after it; silence ends a run', async () => {
    const { outcomes } = await stageRun(sig, 7);
    assert.deepEqual(
      outcomes.map((o) => `${o.window}:${o.kind}${'run' in o ? `@${o.run}` : ''}`),
      ['0:embedded@0', '1:carry@1', '2:embedded@2', '3:none', '4:embedded@0', '5:carry@1'],
    );
  });

  it('gives the encoder exactly the window samples, the last window zero-padded', async () => {
    const last = signal(W + 10, () => true);
    const { outcomes } = await stageRun(last, 5);
    assert.equal(outcomes.length, 2);
    const first = outcomes[0]!;
    assert.ok(first.kind === 'embedded');
    assert.equal(first.embeddings[0]![0], (1 + W) / 2); // mean of step numbers 1..25
    assert.equal(outcomes[1]!.kind, 'carry');
  });

  it('decides the same windows whatever the chunking (a stream of 1 step vs a file chunk of 1000)', async () => {
    const a = await stageRun(sig, 1);
    const b = await stageRun(sig, 1000);
    assert.deepEqual(a.outcomes, b.outcomes);
  });

  it("embeds sparse windows when asked (a live stream's speaker map): too few voiced steps for the schedule, enough for the sparse bar", async () => {
    // windows: 0 voiced, 1 with 5 voiced steps, 2 silent, 3 with 2 voiced steps, 4 voiced
    const voiced = (s: number): boolean => s < W || (s >= W && s < W + 5) || (s >= 3 * W && s < 3 * W + 2) || s >= 4 * W;
    const sparse = signal(5 * W, voiced);
    const label = (o: WindowOutcome): string => `${o.window}:${o.kind}${'run' in o ? `@${o.run}` : ''}`;
    const plain = await stageRun(sparse, 7);
    assert.deepEqual(plain.outcomes.map(label), ['0:embedded@0', '1:none', '2:none', '3:none', '4:embedded@0']);
    const a = await stageRun(sparse, 1, 4);
    // the sparse window is embedded (its samples, as any window's) and ends the run like 'none'
    assert.deepEqual(a.outcomes.map(label), ['0:embedded@0', '1:sparse', '2:none', '3:none', '4:embedded@0']);
    const one = a.outcomes[1]!;
    assert.ok(one.kind === 'sparse');
    assert.equal(one.embeddings[0]![0], (W + 1 + 2 * W) / 2); // mean of step numbers 26..50
    assert.equal(a.embedded.length, 3);
    assert.deepEqual((await stageRun(sparse, 1000, 4)).outcomes, a.outcomes, 'the same windows whatever the chunking');
    assert.deepEqual((await stageRun(sparse, 1000, 2)).outcomes.map(label), ['0:embedded@0', '1:sparse', '2:none', '3:sparse', '4:embedded@0']);
  });

  it('abstains on chunks without samples (synthetic features)', async () => {
    const outcomes: WindowOutcome[] = [];
    const stage = new EncoderStage({ schedule, embed: () => assert.fail('no encoder call expected'), onWindow: (o) => void outcomes.push(o) });
    await stage.push(new Float32Array(W).fill(-10), undefined, W);
    await stage.end();
    assert.deepEqual(outcomes, [{ window: 0, kind: 'none' }]);
  });

  it('rejects push() and end() after an encoder failure', async () => {
    const stage = new EncoderStage({ schedule, embed: () => Promise.reject(new Error('encoder down')), onWindow: () => undefined });
    await assert.rejects(stage.push(new Float32Array(W).fill(-10), new Float32Array(W * STEP_SAMPLES), W), /encoder down/);
    await assert.rejects(stage.end(), /encoder down/);
  });
});

describe('encoder stage with a speech gate (gender 2.1.1)', () => {
  const gated = { ...schedule, every: 4, speechGate: { steps: 13, minSpeechSteps: 4 } };
  const label = (o: WindowOutcome): string => `${o.window}:${o.kind}${'run' in o ? `@${o.run}` : ''}`;
  // every window voiced; the speech model hears speech except in steps [2W, 2W + 10) (window 2's
  // first 13 steps hold 3 speech steps: music before a voice) and in window 4 from step 4W + 13 on
  const sig = signal(6 * W, () => true);
  const speech = Uint8Array.from({ length: 6 * W }, (_, s) => (s >= 2 * W && s < 2 * W + 10) || s >= 4 * W + 13 ? 0 : 1);

  /** Pushes the steps in chunks of `chunk` and the speech flags `lag` steps behind them (a stream's speech lookahead). */
  async function gatedRun(chunk: number, lag: number): Promise<{ outcomes: string[]; calls: number }> {
    const outcomes: WindowOutcome[] = [];
    const stage = new EncoderStage({ schedule: gated, embed: async () => [Float32Array.of(0)], onWindow: (o) => void outcomes.push(o) });
    assert.ok(stage.speechGated);
    const steps = sig.levels.length;
    const flagged = feedWithLag(stage, sig, speech, chunk, lag);
    const ended = stage.end(); // the last windows wait for their speech flags
    await new Promise((r) => setTimeout(r, 5));
    // the last window (5) is decided once the flags of its first 13 steps are in
    assert.equal(stage.done, flagged >= 5 * W + 13, 'end() waits for the speech flags of the last windows');
    if (flagged < steps) stage.pushSpeech(speech.subarray(flagged), steps - flagged);
    await ended;
    assert.ok(stage.done);
    return { outcomes: outcomes.map(label), calls: stage.calls };
  }

  it("ends the run at a window whose first steps are not speech, so the voice after it gets its own window", async () => {
    const { outcomes, calls } = await gatedRun(1000, 0);
    // window 4: speech in its first 13 steps only: still embedded (the gate reads the first 13)
    assert.deepEqual(outcomes, ['0:embedded@0', '1:carry@1', '2:none', '3:embedded@0', '4:carry@1', '5:none']);
    assert.equal(calls, 2);
    const ungated = await stageRun(sig, 1000);
    assert.deepEqual(ungated.outcomes.map(label), ['0:embedded@0', '1:carry@1', '2:embedded@2', '3:carry@3', '4:embedded@4', '5:carry@5']);
  });

  it('decides the same windows whether the speech flags come with the steps, 12 steps behind (a stream) or after them all (a file)', async () => {
    const file = await gatedRun(1000, 0);
    assert.deepEqual(await gatedRun(1, 12), file);
    assert.deepEqual(await gatedRun(7, 12), file);
    assert.deepEqual(await gatedRun(1000, 6 * W), file);
  });

  it("settles once the windows the speech flags decided are embedded, which a push's promise cannot wait for", async () => {
    // the file runner reads ahead while its pushes are unsettled: a gated stage's push resolves
    // before its windows are decided, so the reader waits on settled() after the speech model's push
    const finish: (() => void)[] = [];
    const stage = new EncoderStage({
      schedule: gated,
      embed: () => new Promise((resolve) => finish.push(() => resolve([Float32Array.of(0)]))),
      onWindow: () => undefined,
    });
    let pushed = false;
    void stage.push(sig.levels, sig.pcm, 6 * W).then(() => (pushed = true));
    await new Promise((r) => setTimeout(r, 1));
    assert.ok(pushed, 'no window is decided before its speech flags');
    stage.pushSpeech(speech, 6 * W);
    let settled = false;
    const settling = stage.settled().then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 1));
    assert.equal(finish.length, 2, 'windows 0 and 3 are embedding');
    assert.ok(!settled, 'settled() waits for the windows being embedded');
    finish.forEach((f) => f());
    await settling;
    assert.ok(settled);
  });

  it('needs the speech model attached to the channel views', () => {
    const model = { name: 'g', rawKeys: ['f', 'm'], views: { schedule: gated, views: [], fusion: { net: 1, views: [], bias: Float32Array.of(0, 0) }, classes: 2 } } as unknown as ModelInfo;
    const views = new ChannelViews(async () => Float32Array.of(0));
    views.attach(model, () => undefined);
    assert.throws(() => views.stages, /speech model/);
    const withSpeech = new ChannelViews(async () => Float32Array.of(0));
    withSpeech.attach(model, () => undefined);
    withSpeech.attachSpeech({ name: 'speech', rawKeys: ['music', 'other', 'speech'] } as unknown as ModelInfo, () => undefined, 2);
    assert.equal(withSpeech.stages.length, 1);
    assert.ok(withSpeech.stages[0]!.speechGated);
  });
});

describe("encoder stage with a non-speech gate (the speaker map's file gate, an option since session 40)", () => {
  // hop 6 (the speaker map's overlapping windows), every window embedded; the speech model hears
  // music in steps [30, 60) (voiced, not speech) and speech elsewhere; steps [90, 114) silent: a
  // turn after a pause. The gate: at most 6 of a window's first 13 steps voiced yet not speech.
  const H = 6;
  const gate = { ...schedule, hopSteps: H, every: 1, speechGate: { steps: 13, minSpeechSteps: 0, maxNonSpeechSteps: 6 } };
  const steps = 130;
  const sig = signal(steps, (s) => s < 90 || s >= 114);
  const speech = Uint8Array.from({ length: steps }, (_, s) => (s >= 30 && s < 60) || (s >= 90 && s < 114) ? 0 : 1);

  async function run(chunk: number, lag: number, withGate = true): Promise<string[]> {
    const outcomes: WindowOutcome[] = [];
    const { speechGate: _unused, ...levelsOnly } = gate;
    const stage = new EncoderStage({ schedule: withGate ? gate : levelsOnly, embed: async () => [Float32Array.of(0)], onWindow: (o) => void outcomes.push(o), sparseMinVoicedSteps: 4 });
    const flagged = feedWithLag(stage, sig, speech, chunk, lag);
    const ended = stage.end();
    if (flagged < steps) stage.pushSpeech(speech.subarray(flagged), steps - flagged);
    await ended;
    return outcomes.map((o) => `${o.window}:${o.kind}`);
  }

  it('skips the windows whose first steps are mostly music, keeps a turn\'s first window after silence', async () => {
    const got = await run(1000, 0);
    const kind = (w: number): string => got[w]!.split(':')[1]!;
    // window j starts at 6j: its first 13 steps [6j, 6j + 13) hold more than 6 music steps for j = 4..8
    for (let j = 0; j < got.length; j++) {
      const first = j * H;
      let music = 0;
      for (let s = first; s < Math.min(first + 13, steps); s++) if (s >= 30 && s < 60) music++;
      if (music > 6) assert.equal(kind(j), 'none', `window ${j} (music in ${music} of its first 13 steps)`);
    }
    assert.deepEqual([4, 5, 6, 7, 8].map(kind), ['none', 'none', 'none', 'none', 'none']);
    assert.equal(kind(3), 'embedded', 'window 3: 12 speech steps, then music');
    assert.equal(kind(9), 'embedded', 'window 9: 6 music steps, then speech');
    // windows 15-16 start in the pause: silent steps are no evidence of music, the voice after it passes
    assert.equal(kind(15), 'none', 'window 15: 1 voiced step');
    assert.equal(kind(16), 'sparse', 'window 16: 7 voiced steps after 13 silent ones, a turn\'s first window');
    assert.equal(kind(17), 'embedded');
    // the Python twin's case (training/tests/test_diarization.py test_speech_gate_matches_the_stage)
    assert.deepEqual(got.filter((o) => o.endsWith(':sparse')), ['14:sparse', '16:sparse', '21:sparse']);
    const ungated = await run(1000, 0, false);
    assert.deepEqual([4, 5, 6, 7, 8].map((w) => ungated[w]), ['4:embedded', '5:embedded', '6:embedded', '7:embedded', '8:embedded'], 'without the gate the music is embedded');
    assert.deepEqual(ungated.slice(15, 18), got.slice(15, 18));
  });

  it('decides the same windows whatever the chunking and the speech flags\' lag', async () => {
    const file = await run(1000, 0);
    assert.deepEqual(await run(1, 12), file);
    assert.deepEqual(await run(5, 12), file);
    assert.deepEqual(await run(1000, steps), file);
  });

  it('a stage adopted by the channel views gets the speech model\'s decisions, and needs them', () => {
    const views = new ChannelViews(async () => Float32Array.of(0));
    views.adopt(new EncoderStage({ schedule: gate, embed: async () => [Float32Array.of(0)], onWindow: () => undefined }));
    assert.throws(() => views.stages, /speech model/);
    const withSpeech = new ChannelViews(async () => Float32Array.of(0));
    const stage = withSpeech.adopt(new EncoderStage({ schedule: gate, embed: async () => [Float32Array.of(0)], onWindow: () => undefined }));
    const out = withSpeech.attachSpeech({ name: 'speech', rawKeys: ['music', 'other', 'speech'] } as unknown as ModelInfo, () => undefined, 2);
    assert.deepEqual(withSpeech.stages, [stage]);
    void stage.push(Float32Array.from({ length: W }, () => -20), new Float32Array(W * STEP_SAMPLES), W);
    out(0, Float32Array.from({ length: 3 * 13 }, (_, i) => (i % 3 === 2 ? 0.9 : 0.05)), 13);
    assert.equal(stage.calls, 1, 'the speech flags reached the adopted stage, which embedded its window');
  });
});

describe('view fusion', () => {
  // two views: the second head is 0.5 * e[1], weighted -1 (so it cancels a part of the first)
  // two classes: class 0's row of every head and bias is zero (views.ts)
  const encoder = { dim: 2 };
  const views = {
    schedule,
    views: [{ encoder, head: { weights: Float32Array.of(0, 0, 2, 0), bias: Float32Array.of(0, -1) } }, { encoder, head: { weights: Float32Array.of(0, 0, 0, 0.5), bias: Float32Array.of(0, 0) } }],
    fusion: { net: 0.5, views: [1.5, -1], bias: Float32Array.of(0, 0.25) },
    classes: 2,
  } as unknown as ModelViews;
  const logit = (p: number): number => Math.log(p / (1 - p));
  const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

  function fuse(order: 'net-first' | 'windows-first', outcomes: WindowOutcome[], net: Float32Array): Float32Array {
    const out: number[] = [];
    const f = new ViewFusion(views, (start, probs, steps) => {
      assert.equal(start, out.length / 2);
      assert.equal(probs.length, steps * 2);
      out.push(...probs);
    });
    if (order === 'net-first') {
      f.pushNet(net, net.length / 2);
      outcomes.forEach((o) => f.pushWindow(o));
    } else {
      outcomes.forEach((o) => f.pushWindow(o));
      for (let s = 0; s < net.length / 2; s += 3) f.pushNet(net.subarray(2 * s, Math.min(net.length, 2 * s + 6)), Math.min(3, net.length / 2 - s));
    }
    return Float32Array.from(out);
  }

  const steps = 3 * W;
  const net = new Float32Array(steps * 2);
  for (let s = 0; s < steps; s++) {
    const p = 0.2 + (0.6 * s) / steps;
    net[2 * s] = 1 - p;
    net[2 * s + 1] = p;
  }
  const outcomes: WindowOutcome[] = [
    { window: 0, kind: 'embedded', embeddings: [Float32Array.of(1.5, 9), Float32Array.of(0, 2)], run: 0 },
    { window: 1, kind: 'carry', run: 1 },
    { window: 2, kind: 'none' },
  ];

  it('fuses log-odds (every view weighted) where a view holds (embedded and carried windows) and keeps the network elsewhere', () => {
    const out = fuse('net-first', outcomes, net);
    assert.equal(out.length, steps * 2);
    const view = 1.5 * (2 * 1.5 - 1) - 1 * (0.5 * 2);
    for (const s of [0, 24, 25, 49]) {
      const want = sigmoid(0.5 * logit(net[2 * s + 1]!) + view + 0.25);
      assert.ok(Math.abs(out[2 * s + 1]! - want) < 1e-6, `step ${s}`);
      assert.ok(Math.abs(out[2 * s]! + out[2 * s + 1]! - 1) < 1e-6);
    }
    for (const s of [50, 74]) assert.equal(out[2 * s + 1], net[2 * s + 1]);
  });

  it('gives the same numbers whatever arrives first', () => {
    assert.deepEqual(fuse('net-first', outcomes, net), fuse('windows-first', outcomes, net));
  });

  it('fuses C > 2 classes as softmax(net * log p + sum views * z + bias), and reads embeddings where the shared stage put them', () => {
    const three = {
      schedule,
      views: [{ encoder: { dim: 2 }, head: { weights: Float32Array.of(1, 0, 0, 1, -1, -1), bias: Float32Array.of(0, 0.5, 0) } }],
      fusion: { net: 0.8, views: [2], bias: Float32Array.of(-0.1, 0, 0.1) },
      classes: 3,
    } as unknown as ModelViews;
    const out: number[] = [];
    // the stage embeds two encoders; this model's view is the second
    const f = new ViewFusion(three, (_s, p) => out.push(...p), [1]);
    const p = [0.2, 0.3, 0.5];
    f.pushNet(Float32Array.from([...p, ...p]), 2);
    f.pushWindow({ window: 0, kind: 'embedded', embeddings: [Float32Array.of(99, 99), Float32Array.of(0.4, -0.2)], run: 0 });
    const e = [0.4, -0.2];
    const z = [0, 1, 2].map((c) => 0.8 * Math.log(p[c]!) + 2 * ([e[0]!, e[1]! + 0.5, -e[0]! - e[1]!][c]!) + [-0.1, 0, 0.1][c]!);
    const sum = z.reduce((a, v) => a + Math.exp(v), 0);
    assert.equal(out.length, 6);
    for (let c = 0; c < 3; c++) assert.ok(Math.abs(out[c]! - Math.exp(z[c]!) / sum) < 1e-6, `class ${c}`);
    assert.deepEqual(out.slice(0, 3), out.slice(3, 6));
  });

  it('holds a step back until its window is known', () => {
    let emitted = 0;
    const f = new ViewFusion(views, (_s, _p, n) => (emitted += n));
    f.pushNet(net, steps);
    assert.equal(emitted, 0);
    f.pushWindow(outcomes[0]!);
    assert.equal(emitted, W);
  });
});

describe('channel views (one encoder stage shared by several models)', () => {
  // model A: encoder x, every 4; model B: encoders x and y, every 2 (two classes each)
  const enc = (name: string): EncoderInfo => ({ name, modelPath: `/${name}.onnx`, dim: 1, windowSteps: W } as unknown as EncoderInfo);
  const x = enc('x');
  const y = enc('y');
  const modelOf = (encoders: EncoderInfo[], every: number, weight: number): ModelInfo =>
    ({
      views: {
        schedule: { windowSteps: W, every, minVoicedSteps: 8, gateDb: -50 },
        views: encoders.map((encoder) => ({ encoder, head: { weights: Float32Array.of(0, weight), bias: Float32Array.of(0, 0) } })),
        fusion: { net: 1, views: encoders.map(() => 1), bias: Float32Array.of(0, 0) },
        classes: 2,
      },
    }) as unknown as ModelInfo;
  const A = modelOf([x], 4, 1);
  const B = modelOf([x, y], 2, -1);
  const steps = 12 * W;
  const sig = signal(steps, () => true);

  /** Runs the models on one ChannelViews; returns each model's fused P(class 1) and the encoder calls by name@run. */
  async function run(models: ModelInfo[]): Promise<{ out: number[][]; calls: string[] }> {
    const calls: string[] = [];
    const views = new ChannelViews(async (e, pcm) => {
      calls.push(`${e.modelPath.slice(1, 2)}@${Math.round(pcm[0]! - 1) / W}`);
      return Float32Array.of(e === x ? pcm[0]! / 100 : -pcm[0]! / 50); // depends on the window: a stale carry shows
    });
    const out: number[][] = models.map(() => []);
    const outputs = models.map((m, i) => views.attach(m, (_s, p, n) => { for (let k = 0; k < n; k++) out[i]!.push(p[2 * k + 1]!); }));
    const net = new Float32Array(steps * 2).fill(0.5);
    for (const st of views.stages) await st.push(sig.levels, sig.pcm, steps);
    for (const st of views.stages) await st.end();
    outputs.forEach((o) => o(0, net, steps));
    return { out, calls };
  }

  it('runs one stage for both, each encoder only where a model reads it, and gives each model what it gets alone', async () => {
    const both = await run([A, B]);
    assert.deepEqual(both.calls.filter((c) => c.startsWith('x')).map((c) => c.slice(2)), ['0', '2', '4', '6', '8', '10']);
    assert.deepEqual(both.calls.filter((c) => c.startsWith('y')).map((c) => c.slice(2)), ['0', '2', '4', '6', '8', '10']);
    const alone = await run([A]);
    assert.deepEqual(alone.calls, ['x@0', 'x@4', 'x@8']);
    assert.deepEqual(both.out[0], alone.out[0], 'A alone = A beside B');
    assert.deepEqual(both.out[1], (await run([B])).out[0], 'B alone = B beside A');
    // A's view changes every 4 windows only: windows 1-3 carry window 0's
    assert.equal(alone.out[0]![W], alone.out[0]![0]);
    assert.notEqual(alone.out[0]![4 * W], alone.out[0]![0]);
  });
});
