/**
 * A live stream's speech calls when an encoder view is speech-gated (gender 2.1.1): the gate reads the
 * speech outputs of a window's first 13 steps, so the speech model's calls must end often enough that
 * those outputs are never later than the gated model's own outputs of the output step the window
 * starts in (else a gender result would wait longer than before the gate).
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import type { ModelInfo } from '../../src/inference/registry';
import { speechCallAlign } from '../../src/pipeline/analyze-stream';
import { ModelRegistry } from '../../src/inference';

describe('speech calls of a stream with a speech-gated encoder view', () => {
  const registry = ModelRegistry.loadSync();
  const speech = registry.get('speech');
  const gender = registry.get('gender');
  const gate = gender.views!.schedule.speechGate!;
  const W = gender.views!.schedule.windowSteps;

  it('are aligned to whole output steps without a gated view, and more finely with one', () => {
    assert.equal(speechCallAlign([speech, registry.get('arousal')], 16), 16);
    const ungated = { ...gender, views: { ...gender.views!, schedule: { ...gender.views!.schedule, speechGate: undefined } } } as ModelInfo;
    assert.equal(speechCallAlign([speech, ungated], 16), 16);
    assert.equal(speechCallAlign([speech, gender], 16), 4);
    assert.equal(speechCallAlign([speech, gender], 1), 1);
    assert.equal(speechCallAlign([speech, gender], 36), 12);
  });

  it('never make the gated model wait: the gate\'s speech outputs are in by the time its own outputs are', () => {
    const rs = speech.context.rightSteps;
    const rg = gender.context.rightSteps;
    assert.ok(gate.steps - 1 <= rg - rs, 'the gate reads no step whose speech output comes after the window\'s model outputs');
    for (let p = 1; p <= 80; p++) {
      const a = speechCallAlign([speech, gender], p);
      assert.equal(p % a, 0, 'calls still end on output-step boundaries');
      for (let start = 0; start < W * p * 12; start += W) {
        // steps received when the speech output of the window's last gated step is in (calls end on multiples of a)
        const last = start + gate.steps - 1;
        const speechIn = (Math.floor(last / a) + 1) * a + rs;
        // ... and when the gated model's outputs of the output step the window starts in are
        const modelIn = (Math.floor(start / p) + 1) * p + rg;
        assert.ok(speechIn <= modelIn, `p ${p}, window at step ${start}: speech in at ${speechIn}, model at ${modelIn}`);
      }
    }
  });
});
