/**
 * nativeStateCopy(): the addon's memcpy of live streams' model states between their shared buffers and one batch
 * (src/inference/worker.ts gather / scatter): the same floats as typed-array copies, in order, and clear errors.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AudioError, nativeStateCopy } from '../../src/audio';

const shared = (n: number, fill: (j: number) => number): Float32Array => {
  const a = new Float32Array(new SharedArrayBuffer(n * 4));
  for (let j = 0; j < n; j++) a[j] = fill(j);
  return a;
};

describe('nativeStateCopy()', () => {
  const copy = nativeStateCopy();

  it('gathers shared states side by side and scatters a batch back, float for float', () => {
    const per = 1001;
    const states = [0, 1, 2].map((i) => shared(per, (j) => i * 10_000 + j + 0.25));
    const batch = new Float32Array(per * 3).fill(NaN);
    copy.gather(states, batch);
    for (let i = 0; i < 3; i++) assert.deepEqual(batch.subarray(i * per, (i + 1) * per), states[i]);
    const next = new Float32Array(per * 3).map((_, k) => -k);
    copy.scatter(next, states);
    for (let i = 0; i < 3; i++) assert.deepEqual(states[i], next.subarray(i * per, (i + 1) * per));
  });

  it('copies from and into views that do not start at their buffer\'s start', () => {
    const whole = new Float32Array(10).map((_, k) => k);
    const out = new Float32Array(8);
    copy.gather([whole.subarray(2, 6), whole.subarray(6, 10)], out);
    assert.deepEqual([...out], [2, 3, 4, 5, 6, 7, 8, 9]);
    const dst = new Float32Array(12);
    copy.scatter(new Float32Array([1, 2, 3, 4]), [dst.subarray(1, 3), dst.subarray(9, 11)]);
    assert.deepEqual([...dst], [0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 0]);
  });

  it('refuses states of different lengths, a batch of the wrong size and non-float arrays', () => {
    const bad = (f: () => void, re: RegExp): void => assert.throws(f, (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT' && re.test(e.message));
    bad(() => copy.gather([new Float32Array(3), new Float32Array(4)], new Float32Array(7)), /different lengths/);
    bad(() => copy.gather([new Float32Array(3)], new Float32Array(4)), /side by side/);
    bad(() => copy.scatter(new Float32Array(5), [new Float32Array(3)]), /side by side/);
    bad(() => copy.gather([], new Float32Array(0)), /at least one state/);
    bad(() => copy.gather([new Float64Array(3) as unknown as Float32Array], new Float32Array(3)), /Float32Arrays/);
  });
});
