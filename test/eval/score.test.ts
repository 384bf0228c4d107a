import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { TaskScorer, rowSteps, groupOf, FileSteps } from '../../src/eval/score';
import { runEval, stepsFromChannel } from '../../src/eval/run';
import { formatTaskReport } from '../../src/eval/report';

const close = (a: number, b: number, eps = 1e-9) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

/** A file whose steps have the given probabilities for one model; silent where level gate says. */
function file(model: string, keys: string[], rows: number[][], silent: number[] = [], silero?: number[]): FileSteps {
  return {
    steps: rows.length,
    silent: rows.map((_, i) => (silent.includes(i) ? 1 : 0)),
    probs: { [model]: Float32Array.from(rows.flat()) },
    rawKeys: { [model]: keys },
    ...(silero ? { silero } : {}),
  };
}

test('rowSteps picks the steps whose middle lies in [start, end)', () => {
  assert.deepEqual(rowSteps({}, 10), [0, 10]);
  assert.deepEqual(rowSteps({ startMs: 0, endMs: 64 }, 10), [0, 1]);
  assert.deepEqual(rowSteps({ startMs: 32, endMs: 96 }, 10), [0, 1]); // middles 32 (in), 96 (out)
  assert.deepEqual(rowSteps({ startMs: 33, endMs: 97 }, 10), [1, 2]);
  assert.deepEqual(rowSteps({ startMs: 500 }, 10), [8, 10]); // middles 544, 608
  assert.deepEqual(rowSteps({ startMs: 5000 }, 10), [10, 10]);
});

test('gender: step scores skip silent steps; utterance by mean and by majority', () => {
  const sc = new TaskScorer('gender', ['female', 'male']);
  // truth male; steps: male, male, female(strong), silent(female) -> step acc 2/3;
  // mean prob: male (0.9+0.8+0.05)/3 = 0.583 -> male; majority male
  sc.add({ task: 'gender', label: 'male' }, file('gender', ['female', 'male'], [[0.1, 0.9], [0.2, 0.8], [0.95, 0.05], [0.99, 0.01]], [3]));
  // truth female, one voiced step predicted male -> utterance male (wrong)
  sc.add({ task: 'gender', label: 'female' }, file('gender', ['female', 'male'], [[0.3, 0.7]]));
  // truth female, all silent -> no voiced steps
  sc.add({ task: 'gender', label: 'female' }, file('gender', ['female', 'male'], [[0.9, 0.1]], [0]));
  const r = sc.report();
  assert.equal(r.rows, 3);
  assert.equal(r.rowsWithoutVoicedSteps, 1);
  assert.equal(r.silentSteps, 2);
  assert.equal(r.step.n, 4);
  assert.deepEqual(r.step.confusion.counts, [
    [0, 1],
    [1, 2],
  ]);
  close(r.step.accuracy, 0.5);
  close(r.step.uar, (0 + 2 / 3) / 2);
  assert.equal(r.utterance.n, 2);
  close(r.utterance.mean.accuracy, 0.5);
  close(r.utterance.majority.accuracy, 0.5);
  assert.equal(r.speechVsNonSpeech, undefined);
  assert.match(formatTaskReport(r), /== gender ==/);
});

test('speech: binary speech vs non-speech for ours and Silero on the same steps', () => {
  const sc = new TaskScorer('speech', ['music', 'other', 'speech']);
  const keys = ['music', 'other', 'speech'];
  // speech file: ours speech, speech, music; silero 1, 0, 1; step 3 silent (not scored)
  sc.add({ task: 'speech', label: 'speech' }, file('speech', keys, [[0, 0, 1], [0.1, 0.1, 0.8], [0.6, 0.1, 0.3], [0, 0, 1]], [3], [1, 0, 1, 1]));
  // music file: ours music, speech; silero 0, 1
  sc.add({ task: 'speech', label: 'music' }, file('speech', keys, [[0.7, 0.2, 0.1], [0.2, 0.1, 0.7]], [], [0, 1]));
  const r = sc.report();
  const b = r.speechVsNonSpeech!;
  assert.equal(b.steps, 5);
  assert.deepEqual([b.ours.tp, b.ours.fp, b.ours.fn, b.ours.tn], [2, 1, 1, 1]);
  assert.ok(b.silero);
  assert.deepEqual([b.silero.tp, b.silero.fp, b.silero.fn, b.silero.tn], [2, 1, 1, 1]);
  assert.equal(b.silero.steps, 5);
  close(b.ours.f1, 4 / 6);
  // 3-class step confusion: speech row -> speech x2, music x1; music row -> music, speech
  assert.deepEqual(r.step.confusion.counts, [
    [1, 0, 1],
    [0, 0, 0],
    [1, 0, 2],
  ]);
  close(r.step.uar, (0.5 + 2 / 3) / 2); // 'other' has no support: left out
  assert.match(formatTaskReport(r), /Silero VAD \(p >= 0.5\)/);
});

test('stepsFromChannel reads silence and raw values from a 64 ms time series', () => {
  const fs_ = stepsFromChannel(
    [
      { results: { gender: { result: 'male' } }, raw: { gender: { male: 0.8, female: 0.2 } } },
      { results: { gender: { result: 'silence' } }, raw: { gender: { male: 0.4, female: 0.6 } } },
    ],
    ['gender'],
  );
  assert.equal(fs_.steps, 2);
  assert.deepEqual(Array.from(fs_.silent), [0, 1]);
  assert.deepEqual(fs_.rawKeys.gender, ['male', 'female']);
  assert.deepEqual(Array.from(fs_.probs.gender), [0.800000011920929, 0.20000000298023224, 0.4000000059604645, 0.6000000238418579]);
  assert.deepEqual(fs_.labels!.gender, ['male', 'silence']);
});

test('runEval groups rows by file and scores them with an injected analyzer (no audio, no models)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-eval-test-'));
  try {
    for (const f of ['a.wav', 'b.wav']) fs.writeFileSync(path.join(dir, f), '');
    const csv = path.join(dir, 'list.csv');
    fs.writeFileSync(csv, 'path,task,label\na.wav,gender,male\na.wav,arousal,high\nb.wav,gender,female\n');
    const calls: string[] = [];
    const report = await runEval({
      csv,
      silero: 'off',
      analyzer: async (file, models) => {
        calls.push(`${path.basename(file)}:${models.join('+')}`);
        const male = path.basename(file) === 'a.wav';
        return {
          steps: 2,
          silent: [0, 0],
          probs: { gender: Float32Array.from(male ? [0.1, 0.9, 0.2, 0.8] : [0.4, 0.6, 0.7, 0.3]), arousal: Float32Array.from([0.8, 0.1, 0.1, 0.6, 0.2, 0.2]) },
          rawKeys: { gender: ['female', 'male'], arousal: ['high', 'low', 'neutral'] },
        };
      },
    });
    assert.deepEqual(calls.sort(), ['a.wav:gender+arousal', 'b.wav:gender']);
    assert.equal(report.files, 2);
    assert.equal(report.rows, 3);
    assert.deepEqual(report.failures, []);
    assert.equal(report.silero.used, false);
    const g = report.tasks.find((t) => t.task === 'gender')!;
    close(g.step.accuracy, 3 / 4);
    close(g.utterance.mean.accuracy, 1); // b: mean female 0.55 -> female
    const a = report.tasks.find((t) => t.task === 'arousal')!;
    close(a.step.accuracy, 1);

    // a missing file is a clear error before anything runs
    fs.appendFileSync(csv, 'missing.wav,gender,male\n');
    await assert.rejects(runEval({ csv, silero: 'off', analyzer: async () => assert.fail('must not run') }), /1 audio file\(s\) not found[\s\S]*missing\.wav/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('per-folder breakdown groups rows by the folder of their CSV path', () => {
  assert.equal(groupOf('audio/ravdess/x.opus'), 'audio/ravdess');
  assert.equal(groupOf('x.wav'), '.');
  assert.equal(groupOf('a\\b\\c.wav'), 'a/b');
  const keys = ['music', 'other', 'speech'];
  const sc = new TaskScorer('speech', keys);
  sc.add({ task: 'speech', label: 'speech', rawPath: 'a/1.wav' }, file('speech', keys, [[0, 0, 1], [1, 0, 0]], [], [1, 1]));
  sc.add({ task: 'speech', label: 'music', rawPath: 'b/2.wav' }, file('speech', keys, [[1, 0, 0]], [], [0]));
  const g = sc.report().byGroup;
  assert.deepEqual(g.map((x) => [x.group, x.rows, x.steps]), [
    ['a', 1, 2],
    ['b', 1, 1],
  ]);
  close(g[0].stepAccuracy, 0.5);
  close(g[0].speechF1!, 2 / 3);
  close(g[0].sileroSpeechF1!, 1);
  close(g[0].speechRate!, 0.5);
  close(g[0].sileroSpeechRate!, 1);
  assert.ok(Number.isNaN(g[1].speechF1!)); // no speech truth, no speech predicted: 0/0
  close(g[1].speechRate!, 0);
  assert.match(formatTaskReport(sc.report()), /per folder/);
});
