/** Diarization error rate (src/eval/diarization.ts) on hand-made turns. */
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { diarizationError, maxAssignment, turnsOfSteps } from '../../src/eval/diarization';

const close = (a: number, b: number, eps = 1e-6): void => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

test('maxAssignment finds the best one-to-one mapping, rectangular too', () => {
  assert.deepEqual(maxAssignment([[1, 5], [4, 1]]), [1, 0]);
  assert.deepEqual(maxAssignment([[0, 3, 1], [2, 0, 0]]), [1, 0]);
  assert.deepEqual(maxAssignment([[1], [5], [2]]), [-1, 0, -1]);
  assert.deepEqual(maxAssignment([]), []);
});

test('a perfect hypothesis with other names scores 0; swapped halves are not confusion', () => {
  const ref = [{ speaker: 'a', start: 0, end: 5 }, { speaker: 'b', start: 5, end: 10 }];
  const hyp = [{ speaker: 'speaker_2', start: 0, end: 5 }, { speaker: 'speaker_1', start: 5, end: 10 }];
  const r = diarizationError(ref, hyp, 10);
  assert.equal(r.der, 0);
  assert.equal(r.refSpeakers, 2);
  assert.equal(r.hypSpeakers, 2);
});

test('missed, false alarm and confusion are each counted outside the collar', () => {
  const ref = [{ speaker: 'a', start: 0, end: 4 }, { speaker: 'b', start: 6, end: 10 }];
  // a right, b called a for 2 s (confusion), 1 s of b missed; 1 s of speech in the pause (false alarm)
  const hyp = [{ speaker: 'x', start: 0, end: 4 }, { speaker: 'x', start: 4.5, end: 5.5 }, { speaker: 'x', start: 6, end: 8 }, { speaker: 'y', start: 8, end: 9 }];
  const r = diarizationError(ref, hyp, 10, 0);
  close(r.scored, 8);
  close(r.confusion, 2);
  close(r.missed, 1);
  close(r.falseAlarm, 1);
  close(r.der, 4 / 8);
  // a 0.25 s collar either side of the boundaries at 0, 4, 6 and 10 s takes 0.25 s of speech at each
  const c = diarizationError(ref, hyp, 10, 0.25);
  close(c.scored, 7);
});

test('overlapping reference speech counts once per speaker', () => {
  const ref = [{ speaker: 'a', start: 0, end: 6 }, { speaker: 'b', start: 4, end: 10 }];
  const hyp = [{ speaker: 'x', start: 0, end: 5 }, { speaker: 'y', start: 5, end: 10 }];
  const r = diarizationError(ref, hyp, 10, 0);
  close(r.scored, 12);
  close(r.missed, 2); // 4-6 s: one hypothesis speaker for two reference speakers
  close(r.confusion, 0);
  close(r.der, 2 / 12);
});

test('turnsOfSteps joins equal speaker labels and skips the rest', () => {
  const t = turnsOfSteps(['speaker_1', 'speaker_1', 'no_speech', 'speaker_2', 'silence', 'speaker_2'], 64, 0.38);
  assert.deepEqual(t.map((x) => [x.speaker, Math.round(x.start * 1000), Math.round(x.end * 1000)]), [
    ['speaker_1', 0, 128],
    ['speaker_2', 192, 256],
    ['speaker_2', 320, 380],
  ]);
});

test('turnsOfSteps bridges a speaker\'s pauses shorter than bridgeS (the references\' rule), never another speaker\'s turn', () => {
  const labels = ['speaker_1', 'silence', 'silence', 'speaker_1', 'silence', 'silence', 'silence', 'silence', 'silence', 'speaker_1', 'speaker_2', 'no_speech', 'speaker_1'];
  const ms = (t: { speaker: string; start: number; end: number }[]): [string, number, number][] => t.map((x) => [x.speaker, Math.round(x.start * 1000), Math.round(x.end * 1000)]);
  // gaps: 128 ms (bridged), 320 ms (kept: not under 0.3 s), then speaker_2 between two speaker_1 turns (kept apart)
  assert.deepEqual(ms(turnsOfSteps(labels, 64, 0.832, 0.3)), [
    ['speaker_1', 0, 256],
    ['speaker_1', 576, 640],
    ['speaker_2', 640, 704],
    ['speaker_1', 768, 832],
  ]);
  assert.equal(turnsOfSteps(labels, 64, 0.832).length, 5, 'without bridging each run of steps is a turn');
});
