/**
 * MemoryTrimmer (src/streaming/memory-trim.ts): when the memory of ended streams is given back
 * to the system (after a burst of closes, rate-limited, with follow-ups), and the real native
 * trim (glibc malloc_trim on a pool thread) answering.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trimNativeMemory } from '../../src/audio';
import { MemoryTrimmer } from '../../src/streaming/memory-trim';

/** A trimmer whose trim only counts its calls (and can be held pending). */
function counting(options: ConstructorParameters<typeof MemoryTrimmer>[0]): { t: MemoryTrimmer; calls: () => number; settle: () => Promise<void> } {
  let calls = 0;
  let release: (() => void) | undefined;
  const t = new MemoryTrimmer(options, () => {
    calls++;
    return new Promise<boolean>((resolve) => (release = () => resolve(true)));
  });
  return {
    t,
    calls: () => calls,
    settle: async () => {
      release?.();
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe('MemoryTrimmer', () => {
  it('trims only after minCloses ended streams, then follow-ups minIntervalMs apart, never two at once', async () => {
    const { t, calls, settle } = counting({ minCloses: 3, minIntervalMs: 1000, followUps: 2 });
    t.tick(0);
    for (let i = 0; i < 2; i++) t.noteClosed();
    t.tick(100);
    assert.equal(calls(), 0, 'two closes are not a burst');
    t.noteClosed();
    t.tick(200);
    assert.equal(calls(), 1, 'the third close makes a trim due');
    for (let i = 0; i < 5; i++) t.noteClosed();
    t.tick(1500);
    assert.equal(calls(), 1, 'not while the previous trim runs');
    await settle();
    t.tick(1100);
    assert.equal(calls(), 1, 'not within minIntervalMs');
    t.tick(1300);
    assert.equal(calls(), 2, 'the closes during the first trim make a new burst');
    await settle();
    t.tick(2400);
    await settle();
    t.tick(3500);
    await settle();
    assert.equal(calls(), 4, 'two follow-ups after the burst');
    t.tick(10_000);
    assert.equal(calls(), 4, 'then nothing until streams end again');
    assert.equal(t.trims, 4);
  });

  it('a failing trim is swallowed and the next one can run', async () => {
    let calls = 0;
    const t = new MemoryTrimmer({ minCloses: 1, minIntervalMs: 0, followUps: 0 }, () => {
      calls++;
      return Promise.reject(new Error('no trim here'));
    });
    t.noteClosed();
    t.tick(1);
    await new Promise((r) => setImmediate(r));
    t.noteClosed();
    t.tick(2);
    assert.equal(calls, 2);
  });

  it('the native trim resolves with a boolean (malloc_trim on glibc, false elsewhere)', async () => {
    const released = await trimNativeMemory();
    assert.equal(typeof released, 'boolean');
  });
});
