import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { parseEvalCsv, splitCsv, EvalCsvError } from '../../src/eval/csv';

const root = path.resolve('/data/root');

function problemsOf(text: string): string[] {
  try {
    parseEvalCsv(text, { root, source: 'list.csv' });
  } catch (err) {
    assert.ok(err instanceof EvalCsvError, `expected EvalCsvError, got ${String(err)}`);
    assert.equal(err.code, 'EVAL_CSV_INVALID');
    assert.match(err.message, /^list\.csv: /);
    return err.problems;
  }
  assert.fail('expected an EvalCsvError');
}

test('positional rows without header, with and without a segment', () => {
  const rows = parseEvalCsv('a/x.wav,speech,music\n/abs/y.opus,gender,female,500,1500\nz.flac,arousal,high,,2000\n', { root });
  assert.equal(rows.length, 3);
  assert.deepEqual(rows[0], { line: 1, rawPath: 'a/x.wav', path: path.join(root, 'a/x.wav'), task: 'speech', label: 'music' });
  assert.equal(rows[1].path, '/abs/y.opus');
  assert.equal(rows[1].startMs, 500);
  assert.equal(rows[1].endMs, 1500);
  assert.equal(rows[2].startMs, undefined);
  assert.equal(rows[2].endMs, 2000);
});

test('header names the columns in any order; extra columns, comments, blank lines, CRLF and quotes', () => {
  const text = '\ufefflabel,extra,task,path\r\n# a comment\r\n\r\nmale,zzz,gender,"dir, with comma/f.wav"\r\nspeech,"say ""hi""",speech,g.wav\r\n';
  const rows = parseEvalCsv(text, { root });
  assert.equal(rows.length, 2);
  assert.equal(rows[0].rawPath, 'dir, with comma/f.wav');
  assert.equal(rows[0].line, 4);
  assert.equal(rows[0].task, 'gender');
  assert.equal(rows[0].label, 'male');
  assert.equal(rows[1].label, 'speech');
  assert.equal(rows[1].line, 5);
});

test('bad rows are all reported with their line numbers', () => {
  const problems = problemsOf(
    [
      'path,task,label,start_ms,end_ms',
      'ok.wav,speech,speech',
      'b.wav,speach,speech', // line 3: unknown task
      'c.wav,gender,other', // line 4: not a gender label
      ',arousal,high', // line 5: empty path
      'd.wav,arousal,low,-5,', // line 6: negative start
      'e.wav,arousal,low,1000,500', // line 7: end <= start
      'f.wav,speech', // line 8: too few columns
      'g.wav,speech,music,abc,10', // line 9: not a number
    ].join('\n'),
  );
  assert.equal(problems.length, 7);
  assert.match(problems[0], /^line 3: unknown task "speach" \(expected one of: speech, gender, arousal, emotions\)/);
  assert.match(problems[1], /^line 4: label "other" is not a gender label \(expected one of: female, male\)/);
  assert.match(problems[2], /^line 5: empty path/);
  assert.match(problems[3], /^line 6: start_ms "-5" is not a non-negative number/);
  assert.match(problems[4], /^line 7: end_ms \(500\) must be greater than start_ms \(1000\)/);
  assert.match(problems[5], /^line 8: expected at least 3 columns, got 2/);
  assert.match(problems[6], /^line 9: start_ms "abc"/);
});

test('positional rows with the wrong column count, a header without a needed column, nothing to do', () => {
  assert.match(problemsOf('a.wav,speech,speech,1,2,3\n')[0], /^line 1: expected 3 to 5 columns/);
  assert.match(problemsOf('path,label\nx.wav,male\n')[0], /header has no "task" column/);
  assert.match(problemsOf('path,task,label\n')[0], /no rows to evaluate/);
  assert.match(problemsOf('a.wav,speech,"open\n')[0], /unterminated quoted field starting on line 1/);
});

test('labels can be overridden per task (e.g. from a model manifest)', () => {
  const rows = parseEvalCsv('x.wav,gender,other\n', { root, labels: { gender: ['female', 'male', 'other'] } });
  assert.equal(rows[0].label, 'other');
});

test('splitCsv keeps line numbers across quoted newlines', () => {
  const recs = splitCsv('a,"b\nc",d\ne,f\n');
  assert.deepEqual(recs, [
    { line: 1, fields: ['a', 'b\nc', 'd'] },
    { line: 3, fields: ['e', 'f'] },
  ]);
});
