import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { ConfusionMatrix, BinaryCounts, prf, argmax, majority, pct } from '../../src/eval/metrics';
import { sileroToSteps } from '../../src/eval/silero';

const close = (a: number, b: number, eps = 1e-12) => assert.ok(Math.abs(a - b) < eps, `${a} != ${b}`);

test('confusion matrix counts truth rows and prediction columns', () => {
  const cm = new ConfusionMatrix(['a', 'b', 'c']);
  // truth a: 3 right, 1 as b; truth b: 2 right, 2 as c; truth c: 1 right
  cm.add('a', 'a', 3);
  cm.add('a', 'b');
  cm.add('b', 'b');
  cm.add('b', 'b');
  cm.add('b', 'c', 2);
  cm.add('c', 'c');
  assert.deepEqual(cm.counts, [
    [3, 1, 0],
    [0, 2, 2],
    [0, 0, 1],
  ]);
  assert.equal(cm.total, 9);
  assert.equal(cm.correct, 6);
  close(cm.accuracy(), 6 / 9);
  const pc = cm.perClass();
  assert.deepEqual(pc.map((c) => c.support), [4, 4, 1]);
  assert.deepEqual(pc.map((c) => c.predicted), [3, 3, 3]);
  close(pc[0].recall, 3 / 4);
  close(pc[1].recall, 2 / 4);
  close(pc[2].recall, 1);
  close(pc[0].precision, 1);
  close(pc[1].precision, 2 / 3);
  close(pc[2].precision, 1 / 3);
  close(pc[0].f1, (2 * 1 * 0.75) / (1 + 0.75));
  close(pc[1].f1, (2 * (2 / 3) * 0.5) / (2 / 3 + 0.5));
  close(pc[2].f1, 0.5);
  // UAR = mean recall = (0.75 + 0.5 + 1) / 3
  close(cm.uar(), 2.25 / 3);
  close(cm.macroF1(), (pc[0].f1 + pc[1].f1 + pc[2].f1) / 3);
  assert.match(cm.format(), /true \\ pred/);
  assert.deepEqual(cm.toJSON(), { labels: ['a', 'b', 'c'], counts: cm.counts });
});

test('UAR differs from accuracy on imbalanced data and skips absent classes', () => {
  const cm = new ConfusionMatrix(['female', 'male']);
  cm.add('male', 'male', 90);
  cm.add('female', 'male', 10);
  close(cm.accuracy(), 0.9);
  close(cm.uar(), 0.5); // female recall 0, male recall 1
  const pc = cm.perClass();
  assert.ok(Number.isNaN(pc[0].precision)); // female never predicted: 0/0
  assert.equal(pc[0].f1, 0); // but F1 is 0: there were misses

  const onlyOne = new ConfusionMatrix(['x', 'y', 'z']);
  onlyOne.add('x', 'x', 2);
  onlyOne.add('x', 'y', 2);
  close(onlyOne.uar(), 0.5); // y and z have no true items: left out
});

test('empty matrix gives NaN scores; unknown labels throw', () => {
  const cm = new ConfusionMatrix(['a', 'b']);
  assert.ok(Number.isNaN(cm.accuracy()));
  assert.ok(Number.isNaN(cm.uar()));
  assert.ok(Number.isNaN(cm.perClass()[0].f1));
  assert.throws(() => cm.add('c', 'a'), /unknown true label "c"/);
  assert.throws(() => cm.add('a', 'c'), /unknown predicted label "c"/);
  assert.throws(() => new ConfusionMatrix(['a', 'a']), /duplicate label/);
  assert.throws(() => new ConfusionMatrix([]), /at least one label/);
});

test('merge adds matrices over the same labels only', () => {
  const a = new ConfusionMatrix(['p', 'q']);
  const b = new ConfusionMatrix(['p', 'q']);
  a.add('p', 'q');
  b.add('p', 'q', 2);
  b.add('q', 'q');
  a.merge(b);
  assert.deepEqual(a.counts, [
    [0, 3],
    [0, 1],
  ]);
  assert.throws(() => a.merge(new ConfusionMatrix(['q', 'p'])), /different labels/);
});

test('binary counts and prf', () => {
  const b = new BinaryCounts();
  const truth = [true, true, true, false, false, true, false];
  const pred = [true, false, true, true, false, true, false];
  truth.forEach((t, i) => b.add(t, pred[i]));
  assert.deepEqual([b.tp, b.fp, b.fn, b.tn], [3, 1, 1, 2]);
  const s = b.scores();
  close(s.precision, 0.75);
  close(s.recall, 0.75);
  close(s.f1, 0.75);
  close(s.accuracy, 5 / 7);
  assert.deepEqual(prf(0, 0, 0).f1, NaN);
  assert.equal(prf(0, 0, 5).f1, 0);
  close(prf(8, 2, 4).f1, 16 / 22);
});

test('argmax, majority and pct', () => {
  assert.equal(argmax([0.1, 0.7, 0.2]), 1);
  assert.equal(argmax([0.5, 0.5]), 0);
  assert.equal(majority(['b', 'a', 'b'], ['a', 'b']), 'b');
  assert.equal(majority(['b', 'a'], ['a', 'b']), 'a'); // tie: order decides
  assert.equal(majority([], ['a']), undefined);
  assert.equal(pct(0.1234), '12.3%');
  assert.equal(pct(NaN), 'n/a');
});

test('Silero windows map to 64 ms steps by averaging the two 32 ms windows', () => {
  // 5 windows over 2100 samples: steps = ceil(2100 / 1024) = 3; the last step has one window.
  const { prob, speech } = sileroToSteps([0.2, 0.9, 0.6, 0.4, 0.7], 2100);
  assert.equal(prob.length, 3);
  close(prob[0], 0.55, 1e-6);
  close(prob[1], 0.5, 1e-6);
  close(prob[2], 0.7, 1e-6);
  assert.deepEqual(Array.from(speech), [1, 1, 1]);
  assert.deepEqual(Array.from(sileroToSteps([0.2, 0.9, 0.6, 0.4], 2048, 0.6).speech), [0, 0]);
});
