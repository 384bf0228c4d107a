/**
 * Sparse windows (speakers 1.9.0): a live stream's speaker stage also embeds the windows with fewer
 * voiced steps than the schedule's but at least the manifest's sparse_min_voiced_steps, with the real
 * encoder; a file job's stage does not (files cluster the schedule's windows only). How a stream
 * scores them: the golden cases (golden.test.ts).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { InferenceEngine } from '../../src/inference';
import type { WindowOutcome } from '../../src/inference/encoder-stage';
import { STEP_SAMPLES } from '../../src/inference/views';

describe('speaker stage: sparse windows in live streams only', () => {
  let engine: InferenceEngine;
  before(async () => {
    engine = await InferenceEngine.create({ size: 1, verify: false });
  });
  after(() => engine.close());

  /** Windows 0 and 1 of a signal voiced on its first H + v steps (window 1 = steps [H, H + W) has v of them), and the kinds the rule expects. */
  async function outcomes(live: boolean, v: number): Promise<{ got: WindowOutcome[]; expected: string[] }> {
    const model = engine.model('speakers');
    const map = model.speakerMap!;
    const { windowSteps: W, hopSteps: H, minVoicedSteps } = map.schedule;
    const steps = W + H;
    const voiced = (s: number): boolean => s < H + v;
    const levels = Float32Array.from({ length: steps }, (_, s) => (voiced(s) ? -20 : -90));
    let seed = 7;
    const pcm = Float32Array.from({ length: steps * STEP_SAMPLES }, (_, i) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return voiced(Math.floor(i / STEP_SAMPLES)) ? (seed / 0x7fffffff - 0.5) * 0.2 : 0;
    });
    const got: WindowOutcome[] = [];
    const stage = engine.speakerStage(model, (o) => void got.push(o), { live });
    // a file job's stage waits for the speech model's decisions (a file speech gate, when the manifest sets one): all speech here
    assert.equal(stage.speechGated, !live && map.fileSpeechGate !== undefined);
    if (stage.speechGated) stage.pushSpeech(new Uint8Array(steps).fill(1), steps);
    await stage.push(levels, pcm, steps);
    const kind = (count: number): string => (count >= minVoicedSteps ? 'embedded' : live && count >= map.sparseMinVoicedSteps! ? 'sparse' : 'none');
    return { got: got.slice(0, 2), expected: [kind(Math.min(W, H + v)), kind(v)] };
  }

  it('embeds a window with too few voiced steps for the schedule, enough for the sparse bar, when live', async () => {
    const map = engine.model('speakers').speakerMap!;
    const sparse = map.sparseMinVoicedSteps!;
    assert.ok(sparse >= 1 && sparse < map.schedule.minVoicedSteps, 'the shipped manifest names sparse windows');
    const live = await outcomes(true, map.schedule.minVoicedSteps - map.schedule.hopSteps);
    assert.deepEqual(live.expected, ['embedded', 'sparse']);
    assert.deepEqual(live.got.map((o) => o.kind), live.expected);
    const e = (live.got[1] as Extract<WindowOutcome, { kind: 'sparse' }>).embeddings[0]!;
    assert.equal(e.length, map.encoder.dim);
    assert.ok(e.every(Number.isFinite) && e.some((x) => x !== 0), 'a real embedding');
    const file = await outcomes(false, map.schedule.minVoicedSteps - map.schedule.hopSteps);
    assert.deepEqual(file.got.map((o) => o.kind), ['embedded', 'none'], "a file's stage: none");
    const under = await outcomes(true, sparse - 1);
    assert.equal(under.expected[1], 'none');
    assert.deepEqual(under.got.map((o) => o.kind), under.expected, 'under the sparse bar: none');
  });
});
