/**
 * StepBuffer (src/inference/step-buffer.ts): steps appended and dropped in any pattern read back
 * exactly (views and copies), however the storage is compacted or grown underneath.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StepBuffer } from '../../src/inference/step-buffer';
import { rng } from '../audio/helpers';

/** Step s of width w holds s * 1000 + i for i < w. */
function steps(from: number, to: number, width: number): Float32Array {
  const out = new Float32Array((to - from) * width);
  for (let s = from; s < to; s++) for (let i = 0; i < width; i++) out[(s - from) * width + i] = s * 1000 + i;
  return out;
}

describe('StepBuffer', () => {
  it('appends and drops in random runs read back the right steps (views and copies)', () => {
    for (const width of [1, 3, 256]) {
      const r = rng(width);
      const buf = new StepBuffer(width, 20);
      let end = 0;
      for (let round = 0; round < 400; round++) {
        const add = Math.floor(r() * 6);
        if (add > 0) buf.append(steps(end, end + add, width));
        end += add;
        assert.equal(buf.end, end);
        // keep a context of up to 60 steps, dropping one or a few per round as a runner does
        buf.dropBefore(Math.max(buf.start, end - 40 - Math.floor(r() * 20)));
        const from = buf.start + Math.floor(r() * (buf.length + 1));
        const to = from + Math.floor(r() * (buf.end - from + 1));
        assert.deepEqual(buf.view(from, to), steps(from, to, width), `width ${width} round ${round} view ${from}..${to}`);
        assert.deepEqual(buf.copy(from, to), steps(from, to, width));
        assert.deepEqual(buf.view(), steps(buf.start, buf.end, width));
      }
    }
  });

  it('a copy owns its buffer; dropping everything and clear() start over empty', () => {
    const buf = new StepBuffer(2, 4);
    buf.append(steps(0, 10, 2));
    const c = buf.copy(3, 5);
    assert.equal(c.byteOffset, 0);
    assert.equal(c.buffer.byteLength, c.byteLength);
    buf.dropBefore(100);
    assert.deepEqual([buf.start, buf.length], [10, 0]);
    buf.append(steps(10, 12, 2));
    assert.deepEqual(buf.view(), steps(10, 12, 2));
    buf.clear();
    assert.deepEqual([buf.start, buf.length, buf.view().length], [12, 0, 0]);
  });
});
