import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  MAX_OUTPUT_PERIOD_MS,
  parseAnalysisRequest,
  parseModelList,
  parseOutputPeriod,
  parseVolumeThreshold,
  selectChannels,
} from '../../src/analysis';

const KNOWN = ['speech', 'arousal', 'gender'];

describe('options', () => {
  it('output_period: positive multiples of 64 ms only, with an upper bound', () => {
    assert.equal(parseOutputPeriod(64), 64);
    assert.equal(parseOutputPeriod('1024'), 1024);
    assert.equal(parseOutputPeriod(MAX_OUTPUT_PERIOD_MS), MAX_OUTPUT_PERIOD_MS);
    for (const bad of [0, -64, 100, 64.5, '1e3', 'abc', '', MAX_OUTPUT_PERIOD_MS + 64, NaN]) {
      assert.throws(() => parseOutputPeriod(bad as number), { code: 'INVALID_ARGUMENT' }, String(bad));
    }
  });

  it('volume_threshold: dBFS in [-120, 0], default -60', () => {
    assert.equal(parseVolumeThreshold(undefined), -60);
    assert.equal(parseVolumeThreshold('-60.5'), -60.5);
    assert.equal(parseVolumeThreshold(-120), -120);
    assert.equal(parseVolumeThreshold(0), 0);
    for (const bad of [1, -121, 'loud', NaN]) assert.throws(() => parseVolumeThreshold(bad), { code: 'INVALID_ARGUMENT' });
  });

  it('models: comma list, trimmed, de-duplicated; unknown names list the valid ones', () => {
    assert.deepEqual(parseModelList(' speech, gender ,speech', KNOWN), ['speech', 'gender']);
    assert.deepEqual(parseModelList(['arousal'], KNOWN), ['arousal']);
    assert.throws(() => parseModelList('', KNOWN), { code: 'INVALID_ARGUMENT' });
    assert.throws(() => parseModelList('speech,age,mood', KNOWN), (e: Error & { code?: string; details?: { valid: string[] } }) => {
      assert.equal(e.code, 'UNKNOWN_MODEL');
      assert.match(e.message, /age, mood/);
      assert.match(e.message, /valid models: arousal, gender, speech/);
      assert.deepEqual(e.details!.valid, ['arousal', 'gender', 'speech']);
      return true;
    });
  });

  it('normalizes a whole request', () => {
    assert.deepEqual(
      parseAnalysisRequest(
        { models: 'gender,speech', outputPeriodMs: '128', channel: '1', includeSummary: 'true', includeRaw: true, volumeThreshold: '-40' },
        KNOWN,
      ),
      {
        models: ['gender', 'speech'],
        outputPeriodMs: 128,
        channel: 1,
        includeSummary: true,
        includeTransitions: false,
        includeRaw: true,
        volumeThreshold: -40,
      },
    );
    assert.throws(() => parseAnalysisRequest({ models: 'speech', outputPeriodMs: 64, channel: -1 }), { code: 'INVALID_CHANNEL' });
    assert.throws(() => parseAnalysisRequest({ models: 'speech', outputPeriodMs: 64, includeSummary: 'yes' }), {
      code: 'INVALID_ARGUMENT',
    });
  });

  it('channel selection: all channels, or one that exists', () => {
    assert.deepEqual(selectChannels(2), [0, 1]);
    assert.deepEqual(selectChannels(2, 1), [1]);
    assert.deepEqual(selectChannels(1, 0), [0]);
    assert.throws(() => selectChannels(1, 1), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'INVALID_CHANNEL');
      assert.match(e.message, /channel 1 does not exist: the file has 1 channel/);
      return true;
    });
  });
});
