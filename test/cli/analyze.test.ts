/**
 * `auris analyze` end to end: compiled CLI, real native front end (src/audio), WAVs made
 * with sox / espeak-ng in a temp dir. The placeholder-model tests need the addon only; the
 * last test needs the real models in models/ (committed by the training side).
 */
import { strict as assert } from 'node:assert';
import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ResultsEnvelope, Segment } from '../../src/analysis';
import { SUPPORTED_FORMATS_TEXT } from '../../src/audio/formats';
import { packageRoot, writePlaceholderModels } from '../../src/inference';

const CLI = path.join(__dirname, '..', '..', 'src', 'cli', 'main.js');
let tmp: string;
let placeholders: string;

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed: ${r.stderr}`);
}

function cli(args: string[], env: Record<string, string> = {}): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    env: { ...process.env, AURIS_INFERENCE_THREADS: '1', ...env },
    maxBuffer: 64 << 20,
  });
}

function json(r: SpawnSyncReturns<string>): ResultsEnvelope {
  assert.equal(r.status, 0, `exit ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as ResultsEnvelope;
}

function checkSegments(segs: Segment[], endMs: number): void {
  assert.equal(segs[0]!.timestamp_start, 0);
  for (let i = 1; i < segs.length; i++) {
    assert.equal(segs[i]!.timestamp_start, segs[i - 1]!.timestamp_end, 'contiguous');
    assert.notEqual(segs[i]!.result, segs[i - 1]!.result, 'collapsed');
  }
  assert.equal(segs.at(-1)!.timestamp_end, endMs);
}

const sumTo1 = (o: Record<string, number>): void =>
  assert.equal(Math.round(Object.values(o).reduce((a, b) => a + b * 10000, 0)), 10000, JSON.stringify(o));

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-cli-'));
  placeholders = writePlaceholderModels(path.join(tmp, 'models'));
  // Stereo 16 kHz: ch0 = 2 s tone then 1.5 s silence; ch1 = 3.5 s of silence.
  sh('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', path.join(tmp, 'tone.wav'), 'synth', '2', 'sine', '440', 'vol', '0.5', ':', 'synth', '1.5', 'sine', '440', 'vol', '0']);
  sh('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', path.join(tmp, 'quiet.wav'), 'trim', '0', '3.5']);
  sh('sox', ['-M', path.join(tmp, 'tone.wav'), path.join(tmp, 'quiet.wav'), path.join(tmp, 'stereo.wav')]);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('auris analyze: arguments and errors (no audio decoded)', () => {
  it('usage errors exit 2', () => {
    assert.equal(cli([]).status, 2);
    assert.equal(cli(['frobnicate']).status, 2);
    const r = cli(['analyze']);
    assert.equal(r.status, 2);
    assert.match(r.stderr, /missing <file>/);
    assert.equal(cli(['analyze', '--bogus']).status, 2);
    const help = cli(['analyze', '--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /--output-period <ms> .*default 1024/);
    assert.match(help.stdout, /--models <list> .*default: every installed model/);
    assert.ok(help.stdout.includes(SUPPORTED_FORMATS_TEXT), help.stdout);
  });

  it('bad parameters and unknown models exit 1 with message and code on stderr, nothing on stdout', () => {
    const file = path.join(tmp, 'stereo.wav');
    const cases: [string[], RegExp][] = [
      [['--models', 'speech', '--output-period', '100'], /\[INVALID_ARGUMENT\].*multiple of 64/],
      [['--models', 'speech', '--volume-threshold', '-130'], /\[INVALID_ARGUMENT\].*volume_threshold/],
      [['--models', 'speech,age'], /\[UNKNOWN_MODEL\].*age.*valid models: arousal, gender, speech/],
    ];
    for (const [args, re] of cases) {
      const r = cli(['analyze', file, '--models-dir', placeholders, ...args]);
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, re);
      assert.equal(r.stdout, '');
    }
  });

  it('a broken model fails start-up naming the file', () => {
    const dir = writePlaceholderModels(path.join(tmp, 'broken'), [{ name: 'speech' }]);
    fs.writeFileSync(path.join(dir, 'speech', 'model.onnx'), 'junk');
    const r = cli(['analyze', path.join(tmp, 'stereo.wav'), '--models', 'speech', '--models-dir', dir]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /\[MODEL_LOAD_FAILED\]/);
    assert.ok(r.stderr.includes(path.join(dir, 'speech', 'model.onnx')), r.stderr);
  });
});

describe('auris analyze: real front end, placeholder models', () => {
  it('prints the results envelope for every channel', () => {
    const r = cli([
      'analyze', path.join(tmp, 'stereo.wav'), '--models', 'speech,arousal,gender', '--output-period', '512',
      '--summary', '--transitions', '--raw', '--models-dir', placeholders,
    ]);
    const env = json(r);
    assert.equal(r.stderr, '', 'no progress bar when stderr is not a TTY');
    assert.match(env.job_id, /^cli-[0-9a-f-]{36}$/);
    assert.deepEqual(Object.keys(env.result.channels), ['0', '1']);
    const [c0, c1] = [env.result.channels['0']!, env.result.channels['1']!];
    // 3.5 s in 512 ms steps: 7 steps, the last one partial.
    assert.deepEqual(c0.time_series.map((s) => s.timestamp), [0, 512, 1024, 1536, 2048, 2560, 3072]);
    for (const step of c0.time_series) {
      assert.deepEqual(Object.keys(step.results), ['speech', 'arousal', 'gender']);
      assert.deepEqual(Object.keys(step.raw!['gender']!).sort(), ['female', 'male']);
    }
    // The tone ends at 2000 ms: steps from 2048 on are silent in ch0; ch1 is silent throughout.
    const label = (s: { results: Record<string, { result: string }> }): string => s.results['speech']!.result;
    assert.deepEqual(c0.time_series.slice(4).map(label), ['silence', 'silence', 'silence']);
    assert.ok(c0.time_series.slice(0, 4).every((s) => label(s) !== 'silence'));
    assert.ok(c1.time_series.every((s) => Object.values(s.results).every((m) => m.result === 'silence' && m.confidence === 1)));
    assert.deepEqual(c1.summary!['speech'], { music_fraction: 0, other_fraction: 0, speech_fraction: 0, silence_fraction: 1 });
    for (const m of ['speech', 'arousal', 'gender']) {
      sumTo1(c0.summary![m]!);
      checkSegments(c0.transitions![m]!, 3500);
    }
    assert.ok(Math.abs(c0.summary!['speech']!['silence_fraction']! - (3500 - 2048) / 3500) <= 1e-4);
  });

  it('--channel selects one channel; a missing channel is INVALID_CHANNEL; --out writes a file', () => {
    const out = path.join(tmp, 'out.json');
    const r = cli(['analyze', path.join(tmp, 'stereo.wav'), '--models', 'speech', '--channel', '1', '--out', out, '--job-id', 'j1', '--models-dir', placeholders]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '');
    const env = JSON.parse(fs.readFileSync(out, 'utf8')) as ResultsEnvelope;
    assert.equal(env.job_id, 'j1');
    assert.deepEqual(Object.keys(env.result.channels), ['1']);
    const bad = cli(['analyze', path.join(tmp, 'stereo.wav'), '--models', 'speech', '--channel', '2', '--models-dir', placeholders]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /\[INVALID_CHANNEL\]/);
  });

  it('--volume-threshold -120 turns the silence gate off', () => {
    const env = json(cli(['analyze', path.join(tmp, 'tone.wav'), '--models', 'speech', '--volume-threshold', '-120', '--models-dir', placeholders]));
    assert.ok(env.result.channels['0']!.time_series.every((s) => s.results['speech']!.result !== 'silence'));
  });

  it('without --models: every installed model, speech first (as `stream` and `jobs submit`)', () => {
    const env = json(cli(['analyze', path.join(tmp, 'tone.wav'), '--models-dir', placeholders]));
    assert.deepEqual(Object.keys(env.result.channels['0']!.time_series[0]!.results), ['speech', 'arousal', 'gender']);
  });

  it('a truncated WAV is analysed (exit 0) with the TRUNCATED_AUDIO warning on stderr; a whole file gets none', () => {
    // The tone's data chunk declares 3.5 s; cut the file after 1 s of samples.
    const whole = fs.readFileSync(path.join(tmp, 'tone.wav'));
    const cut = path.join(tmp, 'cut.wav');
    fs.writeFileSync(cut, whole.subarray(0, 44 + 16000 * 2));
    const r = cli(['analyze', cut, '--models', 'speech', '--models-dir', placeholders]);
    const env = json(r);
    assert.equal(env.result.channels['0']!.time_series.length, 1, 'the second that is there');
    assert.match(r.stderr, /^auris analyze: warning \[TRUNCATED_AUDIO\]: The file ends before the length its header declares/m);
    const ok = cli(['analyze', path.join(tmp, 'tone.wav'), '--models', 'speech', '--models-dir', placeholders]);
    assert.equal(ok.status, 0);
    assert.doesNotMatch(ok.stderr, /warning/);
  });

  it('decoder errors keep their code', () => {
    fs.writeFileSync(path.join(tmp, 'junk.wav'), 'RIFF....not a wav at all');
    const r = cli(['analyze', path.join(tmp, 'junk.wav'), '--models', 'speech', '--models-dir', placeholders]);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /\[(UNSUPPORTED_FORMAT|CORRUPT_AUDIO)\]/);
  });
});

describe('auris analyze: real models (models/)', () => {
  it('finds speech, silence and non-speech in a spoken sentence, a pause and a tone', () => {
    const modelsDir = path.join(packageRoot(), 'models');
    const missing = ['speech', 'arousal', 'gender'].filter((m) => !fs.existsSync(path.join(modelsDir, m, 'manifest.json')));
    assert.deepEqual(missing, [], `real models not in ${modelsDir} yet (expected until the trained models are committed)`);
    // ~6 s of espeak-ng speech, then 2 s of silence, then 3 s of a 440 Hz tone.
    const speechRaw = path.join(tmp, 'speech-raw.wav');
    sh('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', speechRaw, 'The quick brown fox jumps over the lazy dog. Then it runs far away into the forest.']);
    const speech = path.join(tmp, 'speech16.wav');
    sh('sox', [speechRaw, '-r', '16000', '-b', '16', '-c', '1', speech, 'norm', '-3']);
    const gap = path.join(tmp, 'gap.wav');
    sh('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', gap, 'trim', '0', '2']);
    const tone = path.join(tmp, 'tone2.wav');
    sh('sox', ['-n', '-r', '16000', '-b', '16', '-c', '1', tone, 'synth', '3', 'sine', '440', 'vol', '0.5']);
    const file = path.join(tmp, 'mix.wav');
    sh('sox', [speech, gap, tone, file]);
    const speechMs = Number(spawnSync('soxi', ['-D', speech], { encoding: 'utf8' }).stdout) * 1000;

    const env = json(cli(['analyze', file, '--models', 'speech,arousal,gender', '--output-period', '1024', '--summary', '--transitions', '--raw', '--models-dir', modelsDir]));
    const c0 = env.result.channels['0']!;
    const stepsIn = (from: number, to: number) => c0.time_series.filter((s) => s.timestamp >= from && s.timestamp + 1024 <= to);
    const speechPart = stepsIn(0, speechMs);
    const silentPart = stepsIn(speechMs + 100, speechMs + 2000);
    const tonePart = stepsIn(speechMs + 2000, Infinity); // the last, partial step is tone too
    assert.ok(speechPart.length >= 4 && silentPart.length >= 1 && tonePart.length >= 2, JSON.stringify([speechMs, speechPart.length, silentPart.length, tonePart.length]));
    const share = (steps: typeof speechPart, model: string, label: string): number =>
      steps.filter((s) => s.results[model]!.result === label).length / steps.length;
    assert.ok(share(speechPart, 'speech', 'speech') >= 0.5, `speech detected: ${JSON.stringify(speechPart.map((s) => s.results['speech']))}`);
    assert.equal(share(silentPart, 'speech', 'silence'), 1);
    assert.equal(share(tonePart, 'speech', 'speech'), 0, `tone is not speech: ${JSON.stringify(tonePart.map((s) => s.results['speech']))}`);
    for (const s of tonePart) {
      assert.equal(s.results['arousal']!.result, 'no_speech');
      assert.equal(s.results['gender']!.result, 'no_speech');
    }
    for (const s of speechPart.filter((x) => x.results['speech']!.result === 'speech')) {
      assert.ok(['high', 'low', 'neutral'].includes(s.results['arousal']!.result));
      assert.ok(['male', 'female', 'unknown'].includes(s.results['gender']!.result));
    }
    for (const m of ['speech', 'arousal', 'gender']) sumTo1(c0.summary![m]!);
    const endMs = Math.round(Number(spawnSync('soxi', ['-D', file], { encoding: 'utf8' }).stdout) * 1000);
    for (const m of ['speech', 'arousal', 'gender']) checkSegments(c0.transitions![m]!, endMs);
  });
});
