import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  buildChannelResult,
  buildEnvelope,
  ChannelSteps,
  collapseSegments,
  DEFAULT_VOLUME_THRESHOLD_DB,
  GENDER_UNKNOWN_THRESHOLD,
  modelsToRun,
  PostProcessOptions,
  roundFractions,
  stepLevelDb,
  temperedProbability,
} from '../../src/analysis';

const RAW = { speech: ['music', 'other', 'speech'], arousal: ['high', 'low', 'neutral'], gender: ['female', 'male'] };
const LOUD = -20;
const QUIET = -90;

/** Per-step rows -> flat Float32Array. */
const flat = (rows: number[][]): Float32Array => Float32Array.from(rows.flat());
const rep = <T>(n: number, v: T): T[] => Array.from({ length: n }, () => v);

/** Hand-worked cases decide gender step by step; the segment mean has its own tests below. */
function opts(models: string[], extra: Partial<PostProcessOptions> = {}): PostProcessOptions {
  return { models, rawKeys: RAW, outputPeriodMs: 64, volumeThreshold: DEFAULT_VOLUME_THRESHOLD_DB, segmentSmoothing: false, ...extra };
}

const SP = [0.1, 0.1, 0.8]; // speech
const MU = [0.7, 0.2, 0.1]; // music
const HI = [0.6, 0.3, 0.1];
const FE = [0.9, 0.1];
const MA = [0.2, 0.8];
const AMB = [0.52, 0.48]; // gender below threshold

function sumUnits(o: Record<string, number>): number {
  return Math.round(Object.values(o).reduce((a, b) => a + b * 10000, 0));
}

describe('time series', () => {
  it('one result per 64 ms step with integer ms timestamps and one key per model', () => {
    const input: ChannelSteps = { steps: 3, levels: rep(3, LOUD), probs: { speech: flat([SP, MU, SP]), arousal: flat([HI, HI, HI]) } };
    const r = buildChannelResult(input, opts(['arousal', 'speech']));
    assert.equal(r.time_series.length, 3);
    assert.deepEqual(r.time_series.map((s) => s.timestamp), [0, 64, 128]);
    assert.deepEqual(Object.keys(r.time_series[0]!.results), ['arousal', 'speech']);
    assert.deepEqual(r.time_series[0]!.results['speech'], { result: 'speech', confidence: 0.8 });
    assert.deepEqual(r.time_series[1]!.results['speech'], { result: 'music', confidence: 0.7 });
    assert.deepEqual(r.time_series[0]!.results['arousal'], { result: 'high', confidence: 0.6 });
    assert.equal(r.summary, undefined);
    assert.equal(r.transitions, undefined);
    assert.equal(r.time_series[0]!.raw, undefined);
  });

  it('aggregates output_period sub-steps by averaging probabilities; the last step may be partial', () => {
    // 5 steps, period 128 ms -> output steps [0,1], [2,3], [4]; the file ends 16 ms into step 4.
    const probs = flat([
      [0.6, 0.3, 0.1],
      [0.0, 0.1, 0.9], // mean of first pair: [0.3, 0.2, 0.5] -> speech 0.5
      [0.5, 0.4, 0.1],
      [0.3, 0.6, 0.1], // mean [0.4, 0.5, 0.1] -> other 0.5
      [0.2, 0.2, 0.6],
    ]);
    const r = buildChannelResult(
      { steps: 5, durationMs: 4 * 64 + 16, levels: rep(5, LOUD), probs: { speech: probs } },
      opts(['speech'], { outputPeriodMs: 128, includeRaw: true, includeTransitions: true, includeSummary: true }),
    );
    assert.deepEqual(r.time_series.map((s) => s.timestamp), [0, 128, 256]);
    assert.deepEqual(r.time_series[0]!.results['speech'], { result: 'speech', confidence: 0.5 });
    assert.deepEqual(r.time_series[0]!.raw, { speech: { music: 0.3, other: 0.2, speech: 0.5 } });
    assert.deepEqual(r.time_series[1]!.results['speech'], { result: 'other', confidence: 0.5 });
    assert.deepEqual(r.time_series[2]!.results['speech'], { result: 'speech', confidence: 0.6 });
    // Fractions weight the partial last step by its real length: 128 + 16 of 272 ms are speech.
    assert.deepEqual(r.summary!['speech'], {
      music_fraction: 0,
      other_fraction: 0.4706, // 128/272
      speech_fraction: 0.5294, // 144/272
      silence_fraction: 0,
    });
    const seg = r.transitions!['speech']!;
    assert.deepEqual(seg.map((s) => [s.timestamp_start, s.timestamp_end, s.result]), [
      [0, 128, 'speech'],
      [128, 256, 'other'],
      [256, 272, 'speech'],
    ]);
  });

  it('weights a partial last sub-step by its duration when averaging', () => {
    // Period 128: step 0 (64 ms) music, step 1 only 16 ms long speech.
    const r = buildChannelResult(
      { steps: 2, durationMs: 80, levels: rep(2, LOUD), probs: { speech: flat([[1, 0, 0], [0, 0, 1]]) } },
      opts(['speech'], { outputPeriodMs: 128, includeRaw: true }),
    );
    assert.deepEqual(r.time_series[0]!.raw!['speech'], { music: 0.8, other: 0, speech: 0.2 });
  });

  it('rounds confidences and raw values to 4 decimals; raw has every raw key of reported models only', () => {
    const r = buildChannelResult(
      { steps: 1, levels: [LOUD], probs: { speech: flat([[0.123456, 0.2, 0.676544]]), gender: flat([[0.712345, 0.287655]]) } },
      opts(['gender'], { includeRaw: true }),
    );
    assert.deepEqual(r.time_series[0]!.results, { gender: { result: 'female', confidence: 0.7123 } });
    assert.deepEqual(r.time_series[0]!.raw, { gender: { female: 0.7123, male: 0.2877 } });
  });

  it('argmax ties go to the first raw key', () => {
    const r = buildChannelResult({ steps: 1, levels: [LOUD], probs: { speech: flat([[0.4, 0.4, 0.2]]) } }, opts(['speech']));
    assert.equal(r.time_series[0]!.results['speech']!.result, 'music');
  });
});

describe('silence gate', () => {
  it('marks steps below volume_threshold as silence (confidence 1) for every model, raw values kept', () => {
    const input: ChannelSteps = {
      steps: 2,
      levels: [QUIET, LOUD],
      probs: { speech: flat([SP, SP]), arousal: flat([HI, HI]), gender: flat([MA, MA]) },
    };
    const r = buildChannelResult(input, opts(['speech', 'arousal', 'gender'], { includeRaw: true }));
    assert.deepEqual(r.time_series[0]!.results, {
      speech: { result: 'silence', confidence: 1 },
      arousal: { result: 'silence', confidence: 1 },
      gender: { result: 'silence', confidence: 1 },
    });
    assert.deepEqual(r.time_series[0]!.raw!['gender'], { female: 0.2, male: 0.8 });
    assert.equal(r.time_series[1]!.results['speech']!.result, 'speech');
  });

  it('a higher threshold makes more audio silence; the default is -60 dBFS; -120 disables the gate', () => {
    const input: ChannelSteps = { steps: 3, levels: [-55, -45, -120], probs: { speech: flat([SP, SP, SP]) } };
    const labels = (t: number): string[] =>
      buildChannelResult(input, opts(['speech'], { volumeThreshold: t })).time_series.map((s) => s.results['speech']!.result);
    assert.equal(DEFAULT_VOLUME_THRESHOLD_DB, -60);
    assert.deepEqual(labels(-50), ['silence', 'speech', 'silence']);
    assert.deepEqual(labels(-40), ['silence', 'silence', 'silence']);
    assert.deepEqual(labels(-60), ['speech', 'speech', 'silence']);
    assert.deepEqual(labels(-120), ['speech', 'speech', 'speech']);
  });

  it('the level of an output step is the mean power of its sub-steps', () => {
    // -40 dB and digital silence: mean power = 1e-4 / 2 -> -43.01 dB.
    assert.ok(Math.abs(stepLevelDb([-40, -120], 0, 2, () => 64) - -43.0103) < 1e-3);
    const input: ChannelSteps = { steps: 2, levels: [-40, -120], probs: { speech: flat([SP, SP]) } };
    const at = (t: number): string =>
      buildChannelResult(input, opts(['speech'], { outputPeriodMs: 128, volumeThreshold: t })).time_series[0]!.results['speech']!.result;
    assert.equal(at(-43.1), 'speech');
    assert.equal(at(-42.9), 'silence');
  });
});

describe('no_speech and unknown', () => {
  const input: ChannelSteps = {
    steps: 4,
    levels: [LOUD, LOUD, QUIET, LOUD],
    probs: { speech: flat([SP, MU, MU, SP]), arousal: flat([HI, HI, HI, HI]), gender: flat([FE, MA, MA, AMB]) },
  };

  it('arousal and gender are no_speech where the speech label is not speech; confidence = 1 - p(speech)', () => {
    const r = buildChannelResult(input, opts(['arousal', 'gender']));
    const ts = r.time_series;
    assert.deepEqual(ts[1]!.results, {
      arousal: { result: 'no_speech', confidence: 0.9 },
      gender: { result: 'no_speech', confidence: 0.9 },
    });
    assert.deepEqual(ts[0]!.results['gender'], { result: 'female', confidence: 0.9 });
    // The gating speech model runs but is not reported unless requested.
    assert.equal(ts[0]!.results['speech'], undefined);
  });

  it('silence takes precedence over no_speech', () => {
    const r = buildChannelResult(input, opts(['arousal', 'gender']));
    assert.deepEqual(r.time_series[2]!.results['arousal'], { result: 'silence', confidence: 1 });
    assert.deepEqual(r.time_series[2]!.results['gender'], { result: 'silence', confidence: 1 });
  });

  it(`gender is unknown when the winning probability is below ${GENDER_UNKNOWN_THRESHOLD}`, () => {
    const r = buildChannelResult(input, opts(['gender']));
    assert.deepEqual(r.time_series[3]!.results['gender'], { result: 'unknown', confidence: 0.52 });
    const edge = buildChannelResult(
      { steps: 1, levels: [LOUD], probs: { speech: flat([SP]), gender: flat([[0.45, 0.55]]) } },
      opts(['gender']),
    );
    assert.equal(edge.time_series[0]!.results['gender']!.result, 'male');
    const custom = buildChannelResult(
      { steps: 1, levels: [LOUD], probs: { speech: flat([SP]), gender: flat([[0.35, 0.65]]) } },
      opts(['gender'], { genderUnknownThreshold: 0.7 }),
    );
    assert.equal(custom.time_series[0]!.results['gender']!.result, 'unknown');
  });

  it('the speech model runs whenever arousal or gender is requested', () => {
    assert.deepEqual(modelsToRun(['gender']), ['gender', 'speech']);
    assert.deepEqual(modelsToRun(['arousal', 'speech']), ['arousal', 'speech']);
    assert.deepEqual(modelsToRun(['speech']), ['speech']);
    assert.throws(() => buildChannelResult({ steps: 1, levels: [LOUD], probs: { gender: flat([FE]) } }, opts(['gender'])), /speech/);
  });
});

describe('confidence temperature (models/<name>/calibration.json)', () => {
  // HI = [0.6, 0.3, 0.1]: at T = 2 the probabilities become sqrt(p) / sum sqrt(p)
  const expected = Math.sqrt(0.6) / (Math.sqrt(0.6) + Math.sqrt(0.3) + Math.sqrt(0.1));
  const input: ChannelSteps = {
    steps: 3,
    levels: [LOUD, LOUD, QUIET],
    probs: { speech: flat([SP, MU, SP]), arousal: flat([HI, HI, HI]), gender: flat([FE, FE, FE]) },
  };

  it('shows a label\'s probability after softmax(log p / T): same label, same raw values, other models untouched', () => {
    const plain = buildChannelResult(input, opts(['arousal', 'gender'], { includeRaw: true, includeTransitions: true }));
    const hot = buildChannelResult(input, opts(['arousal', 'gender'], { includeRaw: true, includeTransitions: true, confidenceTemperature: { arousal: 2 } }));
    assert.deepEqual(plain.time_series[0]!.results['arousal'], { result: 'high', confidence: 0.6 });
    assert.deepEqual(hot.time_series[0]!.results['arousal'], { result: 'high', confidence: Math.round(expected * 10000) / 10000 });
    assert.ok(expected < 0.6 && expected > 1 / 3, `${expected}`);
    assert.deepEqual(hot.time_series[0]!.raw, plain.time_series[0]!.raw, 'raw values are the network\'s own');
    assert.deepEqual(hot.time_series[0]!.results['gender'], plain.time_series[0]!.results['gender'], 'a model without a temperature');
    // no_speech and silence keep their own confidences (the speech model's, and 1)
    assert.deepEqual(hot.time_series[1]!.results['arousal'], plain.time_series[1]!.results['arousal']);
    assert.deepEqual(hot.time_series[2]!.results['arousal'], { result: 'silence', confidence: 1 });
    // a segment's confidence is the mean of its (tempered) steps'
    assert.equal(hot.transitions!['arousal']![0]!.confidence, Math.round(expected * 10000) / 10000);
  });

  it('T = 1 is the network\'s probability; T < 1 sharpens; a zero probability does not break it', () => {
    assert.equal(temperedProbability([0.6, 0.3, 0.1], 0, 1), 0.6);
    assert.ok(temperedProbability([0.6, 0.3, 0.1], 0, 0.5) > 0.6);
    const p = temperedProbability([1, 0, 0], 0, 8);
    assert.ok(Number.isFinite(p) && p > 0.9, `${p}`);
  });
});

describe('summary', () => {
  const input: ChannelSteps = {
    steps: 7,
    durationMs: 6 * 64 + 32,
    levels: [LOUD, LOUD, LOUD, QUIET, LOUD, LOUD, LOUD],
    probs: {
      speech: flat([SP, SP, MU, SP, [0.2, 0.6, 0.2], SP, SP]),
      arousal: flat([HI, [0.1, 0.8, 0.1], HI, HI, HI, [0.1, 0.1, 0.8], HI]),
      gender: flat([FE, MA, FE, FE, FE, AMB, MA]),
    },
  };
  const r = buildChannelResult(input, opts(['speech', 'arousal', 'gender'], { includeSummary: true }));

  it('has exactly the SPEC keys per model, in order', () => {
    assert.deepEqual(Object.keys(r.summary!), ['speech', 'arousal', 'gender']);
    assert.deepEqual(Object.keys(r.summary!['speech']!), ['music_fraction', 'other_fraction', 'speech_fraction', 'silence_fraction']);
    assert.deepEqual(Object.keys(r.summary!['arousal']!), [
      'high_fraction',
      'low_fraction',
      'neutral_fraction',
      'no_speech_fraction',
      'silence_fraction',
    ]);
    assert.deepEqual(Object.keys(r.summary!['gender']!), [
      'male_fraction',
      'female_fraction',
      'other_fraction',
      'unknown_fraction',
      'silence_fraction',
    ]);
  });

  it('fractions are shares of the duration (partial last step by its length) and sum to 1', () => {
    const D = 6 * 64 + 32;
    /** Each rounded fraction is within one unit (1e-4) of the exact share `ms / D`. */
    const near = (got: Record<string, number>, ms: Record<string, number>): void => {
      assert.deepEqual(Object.keys(got), Object.keys(ms));
      for (const k of Object.keys(ms)) assert.ok(Math.abs(got[k]! - ms[k]! / D) <= 1.0001e-4, `${k}: ${got[k]} vs ${ms[k]! / D}`);
      assert.equal(sumUnits(got), 10000);
    };
    near(r.summary!['speech']!, { music_fraction: 64, other_fraction: 64, speech_fraction: 3 * 64 + 32, silence_fraction: 64 });
    // gender: female 0; male 1 and the partial step 6; unknown 5; no_speech (2,4) -> other; silence 3
    near(r.summary!['gender']!, {
      male_fraction: 64 + 32,
      female_fraction: 64,
      other_fraction: 128,
      unknown_fraction: 64,
      silence_fraction: 64,
    });
    near(r.summary!['arousal']!, {
      high_fraction: 64 + 32,
      low_fraction: 64,
      neutral_fraction: 64,
      no_speech_fraction: 128,
      silence_fraction: 64,
    });
  });

  it('rounding keeps the sum at exactly 1 (largest remainder)', () => {
    assert.deepEqual(roundFractions([1 / 3, 1 / 3, 1 / 3]), [0.3334, 0.3333, 0.3333]);
    const thirds = buildChannelResult(
      { steps: 3, levels: rep(3, LOUD), probs: { speech: flat([SP, MU, [0.1, 0.8, 0.1]]) } },
      opts(['speech'], { includeSummary: true }),
    );
    assert.equal(sumUnits(thirds.summary!['speech']!), 10000);
    for (let n = 1; n < 40; n++) {
      const v = Array.from({ length: 5 }, (_, i) => ((i * 7 + n) % 11) + 0.1 * n);
      const sum = v.reduce((a, b) => a + b, 0);
      const out = roundFractions(v.map((x) => x / sum));
      assert.equal(Math.round(out.reduce((a, b) => a + b * 10000, 0)), 10000);
      out.forEach((x, i) => assert.ok(Math.abs(x - v[i]! / sum) < 1.0001e-4));
    }
  });
});

describe('transitions', () => {
  it('collapses equal consecutive results into contiguous segments ending at the audio end', () => {
    const input: ChannelSteps = {
      steps: 6,
      durationMs: 5 * 64 + 40,
      levels: [LOUD, LOUD, QUIET, QUIET, LOUD, LOUD],
      probs: { speech: flat([SP, [0.1, 0.2, 0.7], SP, SP, MU, MU]) },
    };
    const r = buildChannelResult(input, opts(['speech'], { includeTransitions: true }));
    const seg = r.transitions!['speech']!;
    assert.deepEqual(seg, [
      { timestamp_start: 0, timestamp_end: 128, result: 'speech', confidence: 0.75 },
      { timestamp_start: 128, timestamp_end: 256, result: 'silence', confidence: 1 },
      { timestamp_start: 256, timestamp_end: 360, result: 'music', confidence: 0.7 },
    ]);
    for (let i = 1; i < seg.length; i++) {
      assert.equal(seg[i]!.timestamp_start, seg[i - 1]!.timestamp_end);
      assert.notEqual(seg[i]!.result, seg[i - 1]!.result);
    }
  });

  it('segment confidence is the duration-weighted mean of its steps', () => {
    const s = collapseSegments(['a', 'a', 'b'], [0.5, 1, 0.2], [64, 32, 64], 64, 160);
    assert.deepEqual(s[0], { timestamp_start: 0, timestamp_end: 128, result: 'a', confidence: 0.6667 });
    assert.equal(s[1]!.timestamp_end, 160);
  });

  it('one transition list per reported model', () => {
    const r = buildChannelResult(
      { steps: 2, levels: rep(2, LOUD), probs: { speech: flat([SP, MU]), gender: flat([FE, MA]) } },
      opts(['gender'], { includeTransitions: true }),
    );
    assert.deepEqual(Object.keys(r.transitions!), ['gender']);
    assert.deepEqual(r.transitions!['gender']!.map((s) => s.result), ['female', 'no_speech']);
    assert.equal(r.transitions!['gender']![1]!.timestamp_end, 128);
  });
});

describe('envelope', () => {
  it('wraps channels keyed by channel index strings in order', () => {
    const ch = buildChannelResult({ steps: 1, levels: [LOUD], probs: { speech: flat([SP]) } }, opts(['speech']));
    const env = buildEnvelope('job-1', new Map([[1, ch], [0, ch]]));
    assert.deepEqual(Object.keys(env), ['job_id', 'result']);
    assert.equal(env.job_id, 'job-1');
    assert.deepEqual(Object.keys(env.result.channels), ['0', '1']);
    assert.deepEqual(Object.keys(buildEnvelope('j', { '1': ch }).result.channels), ['1']);
  });

  it('rejects inputs that cannot be post-processed', () => {
    assert.throws(() => buildChannelResult({ steps: 0, levels: [], probs: {} }, opts(['speech'])), { code: 'INVALID_ARGUMENT' });
    assert.throws(
      () => buildChannelResult({ steps: 1, levels: [LOUD], probs: { speech: flat([SP]) } }, opts(['speech'], { outputPeriodMs: 100 })),
      { code: 'INVALID_ARGUMENT' },
    );
  });
});

describe('gender segment mean (segment.ts)', () => {
  const smooth = (extra: Partial<PostProcessOptions> = {}): PostProcessOptions => opts(['gender'], { segmentSmoothing: true, ...extra });
  const genders = (r: ReturnType<typeof buildChannelResult>): string[] => r.time_series.map((s) => s.results['gender']!.result);

  it('decides from the running mean since the segment began: one stray step does not flip it', () => {
    // four speech steps: female, female, male, female. Step by step the third is male; the running
    // mean after it is (0.9+0.9+0.2)/3 = 0.667 female, so it stays female (and above the 0.55 threshold).
    const probs = { speech: flat([SP, SP, SP, SP]), gender: flat([FE, FE, MA, FE]) };
    assert.deepEqual(genders(buildChannelResult({ steps: 4, levels: rep(4, LOUD), probs }, opts(['gender']))), ['female', 'female', 'male', 'female']);
    const r = buildChannelResult({ steps: 4, levels: rep(4, LOUD), probs }, smooth({ includeRaw: true }));
    assert.deepEqual(genders(r), ['female', 'female', 'female', 'female']);
    assert.equal(r.time_series[2]!.results['gender']!.confidence, 0.6667);
    // raw keeps the step's own probabilities
    assert.deepEqual(r.time_series[2]!.raw!['gender'], { female: 0.2, male: 0.8 });
  });

  it('a step without speech ends the segment; a short silence does not, a long one does', () => {
    // female x2, music (no_speech), male: the male step starts a new segment
    const noSpeech = buildChannelResult(
      { steps: 4, levels: rep(4, LOUD), probs: { speech: flat([SP, SP, MU, SP]), gender: flat([FE, FE, FE, MA]) } },
      smooth(),
    );
    assert.deepEqual(genders(noSpeech), ['female', 'female', 'no_speech', 'male']);
    // female x3, silence for 8 steps (512 ms: still the same segment), male -> mean (2.7+0.2)/4 = 0.725 female
    const levels = [LOUD, LOUD, LOUD, ...rep(8, -90), LOUD];
    const gender = flat([FE, FE, FE, ...rep(8, FE), MA]);
    const short = buildChannelResult({ steps: 12, levels, probs: { speech: flat(rep(12, SP)), gender } }, smooth());
    assert.equal(genders(short)[11], 'female');
    // with 9 silent steps (576 ms) the male step is a new segment
    const longLevels = [LOUD, LOUD, LOUD, ...rep(9, -90), LOUD];
    const long = buildChannelResult(
      { steps: 13, levels: longLevels, probs: { speech: flat(rep(13, SP)), gender: flat([FE, FE, FE, ...rep(9, FE), MA]) } },
      smooth(),
    );
    assert.equal(genders(long)[12], 'male');
  });

  it('is on by default', () => {
    const probs = { speech: flat([SP, SP, SP]), gender: flat([FE, FE, MA]) };
    const r = buildChannelResult({ steps: 3, levels: rep(3, LOUD), probs }, { models: ['gender'], rawKeys: RAW, outputPeriodMs: 64, volumeThreshold: DEFAULT_VOLUME_THRESHOLD_DB });
    assert.equal(genders(r)[2], 'female');
  });
});
