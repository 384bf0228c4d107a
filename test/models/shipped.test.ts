/**
 * The shipped models (models/) through the real pipeline (addon -> inference -> post-processing):
 * they load, declare the labels the SPEC lists, and call clips we make here what they are:
 * espeak-ng speech is speech, a synthesised plucked melody over a pad is music, digital
 * silence is silence. Fixtures are generated in the test; nothing comes from the datasets.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeSharedEngines, ModelRegistry } from '../../src/inference';
import { analyzeFile } from '../../src/pipeline';
import type { ChannelResult } from '../../src/analysis';

const RAW_KEYS: Record<string, string[]> = {
  speech: ['music', 'other', 'speech'],
  gender: ['female', 'male'],
  arousal: ['high', 'low', 'neutral'],
  emotions: ['happy', 'irritated', 'neutral', 'tired'],
  // the speaker map: one raw key per possible speaker (a channel's results list the speakers it found)
  speakers: Array.from({ length: 20 }, (_, i) => `speaker_${i + 1}`),
};
const LABELS: Record<string, string[]> = {
  speech: ['speech', 'music', 'other', 'silence'],
  arousal: ['high', 'low', 'neutral', 'no_speech', 'silence'],
  gender: ['male', 'female', 'other', 'unknown', 'no_speech', 'silence'],
  emotions: ['happy', 'irritated', 'neutral', 'tired', 'no_speech', 'silence'],
};

let tmp: string;

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed: ${r.stderr}`);
}

/** Share of the channel's steps with this label for one model. */
function share(ch: ChannelResult, model: string, label: string): number {
  const steps = ch.time_series;
  return steps.filter((s) => s.results[model]?.result === label).length / steps.length;
}

async function analyse(file: string): Promise<ChannelResult> {
  const r = await analyzeFile({ path: file }, { models: ['speech', 'gender', 'arousal', 'emotions'], outputPeriodMs: 256, includeRaw: true });
  const ch = r.channels['0'];
  assert.ok(ch, 'channel 0 present');
  return ch;
}

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-models-'));
  const w = (name: string): string => path.join(tmp, name);
  // Speech: a male espeak-ng voice, resampled to 16 kHz.
  sh('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', w('speech-raw.wav'),
    'The quarterly results were discussed at length during the meeting this morning, and everyone agreed to meet again next week.']);
  sh('sox', [w('speech-raw.wav'), '-r', '16000', '-c', '1', '-b', '16', w('speech.wav')]);
  // A male and a female espeak-ng voice saying the same sentence (same prosody, different F0 and formants).
  for (const [name, voice] of [['male', 'en+m3'], ['female', 'en+f3']] as const) {
    sh('espeak-ng', ['-v', voice, '-s', '150', '-w', w(`${name}-raw.wav`),
      'Our customers were satisfied with the service, and we expect further growth in every region next year.']);
    sh('sox', [w(`${name}-raw.wav`), '-r', '16000', '-c', '1', '-b', '16', w(`${name}.wav`)]);
  }
  // Music: a plucked melody in three octaves over a sawtooth pad with tremolo.
  const notes = ['C3', 'E3', 'G3', 'C4', 'A2', 'C3', 'E3', 'A3', 'F2', 'A2', 'C3', 'F3', 'G2', 'B2', 'D3', 'G3'];
  const parts = notes.map((n, i) => {
    const f = w(`note${i}.wav`);
    const up = (k: number): string => n.replace(/\d/, (d) => String(Number(d) + k));
    sh('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', f, 'synth', '0.3', 'pluck', n, 'pluck', up(1), 'pluck', up(2), 'remix', '-', 'vol', '0.5', 'fade', '0', '0.3', '0.05']);
    return f;
  });
  sh('sox', [...parts, ...parts, w('melody.wav')]);
  sh('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', w('pad.wav'), 'synth', '9.6', 'sawtooth', 'C3', 'sawtooth', 'E3', 'sawtooth', 'G3', 'remix', '-', 'lowpass', '2000', 'vol', '0.12', 'tremolo', '2', '40']);
  sh('sox', ['-m', w('melody.wav'), w('pad.wav'), w('music.wav')]);
  // Silence: 3 s of digital zeros.
  sh('sox', ['-n', '-r', '16000', '-c', '1', '-b', '16', w('silence.wav'), 'trim', '0', '3']);
});

after(async () => {
  await closeSharedEngines();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('shipped models', () => {
  it('load from models/ with the declared raw keys, real (not placeholder)', async () => {
    const reg = await ModelRegistry.load({ verify: true });
    assert.deepEqual(reg.names().sort(), ['arousal', 'emotions', 'gender', 'speakers', 'speech']);
    for (const name of reg.names()) {
      const m = reg.get(name);
      assert.deepEqual(m.rawKeys, RAW_KEYS[name], name);
      assert.equal(m.placeholder, false, `${name} is a real model`);
    }
  });

  it('produce only the SPEC labels, and raw values over the raw keys summing to 1', async () => {
    const ch = await analyse(path.join(tmp, 'speech.wav'));
    for (const step of ch.time_series) {
      for (const [model, r] of Object.entries(step.results)) {
        assert.ok(LABELS[model]!.includes(r.result), `${model}: ${r.result}`);
        assert.ok(r.confidence >= 0 && r.confidence <= 1);
      }
      for (const [model, raw] of Object.entries(step.raw ?? {})) {
        assert.deepEqual(Object.keys(raw).sort(), [...RAW_KEYS[model]!].sort());
        const sum = Object.values(raw).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum - 1) < 1e-3, `${model} raw sums to ${sum}`);
      }
    }
  });

  it('call espeak-ng speech speech, and give it a gender and an arousal', async () => {
    const ch = await analyse(path.join(tmp, 'speech.wav'));
    const speech = share(ch, 'speech', 'speech');
    const voiced = 1 - share(ch, 'speech', 'silence');
    assert.ok(speech / voiced > 0.8, `speech on ${(speech / voiced).toFixed(2)} of the voiced steps`);
    const genderDecided = ch.time_series.filter((s) => ['male', 'female'].includes(s.results['gender']!.result)).length;
    assert.ok(genderDecided > 0, 'gender decided on some speech steps');
  });

  it('tell a male espeak-ng voice from a female one saying the same words', async () => {
    for (const [file, want, other] of [['male.wav', 'male', 'female'], ['female.wav', 'female', 'male']] as const) {
      const ch = await analyse(path.join(tmp, file));
      const right = share(ch, 'gender', want);
      const wrong = share(ch, 'gender', other);
      assert.ok(right > 0.6 && wrong < 0.1, `${file}: ${want} on ${right.toFixed(2)}, ${other} on ${wrong.toFixed(2)} of the steps`);
    }
  });

  it('call a synthesised melody over a pad music, with no_speech for gender and arousal', async () => {
    const ch = await analyse(path.join(tmp, 'music.wav'));
    assert.ok(share(ch, 'speech', 'music') > 0.8, `music share ${share(ch, 'speech', 'music')}`);
    assert.ok(share(ch, 'gender', 'no_speech') > 0.8);
    assert.ok(share(ch, 'arousal', 'no_speech') > 0.8);
    assert.ok(share(ch, 'emotions', 'no_speech') > 0.8);
  });

  it('call digital silence silence for every model, confidence 1', async () => {
    const ch = await analyse(path.join(tmp, 'silence.wav'));
    for (const step of ch.time_series) {
      for (const model of ['speech', 'gender', 'arousal', 'emotions']) {
        assert.deepEqual(step.results[model], { result: 'silence', confidence: 1 });
      }
    }
  });
});
