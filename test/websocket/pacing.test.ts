/**
 * Real-time pacing of the stream clients (`--realtime`, streamFile's `realtime`), checked with a fake
 * clock: no wall-clock figure is asserted. Chunk k + 1 must not leave before the audio time of the
 * first k chunks, and an unpaced send must not wait at all.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { sendPcm, type PacingClock } from '../../src/client/file';

/** A clock that only moves when the code under test sleeps; records each send's time. */
function fakeClock(): PacingClock & { t: number } {
  const c = { t: 1000, now: () => c.t, sleep: async (ms: number) => { c.t += ms; } };
  return c;
}

function recorder(clock: { t: number }) {
  const sends: { at: number; bytes: number }[] = [];
  let ended = false;
  return {
    sends,
    ended: () => ended,
    stream: { write: async (b: Uint8Array) => { sends.push({ at: clock.t, bytes: b.length }); }, end: () => { ended = true; } },
  };
}

describe('stream client pacing', () => {
  const rate = 16000;
  const frameBytes = 2; // s16le mono
  const audio = Buffer.alloc(rate * frameBytes * 2.05); // 2.05 s: 20 chunks of 100 ms and a 50 ms tail

  it('realtime: each chunk leaves at the audio time of the chunks before it', async () => {
    const clock = fakeClock();
    const rec = recorder(clock);
    await sendPcm(rec.stream, audio, frameBytes, rate, 100, true, clock);
    assert.equal(rec.sends.length, 21);
    assert.ok(rec.ended());
    rec.sends.forEach((s, k) => assert.equal(s.at - 1000, k * 100, `chunk ${k} sent at ${s.at - 1000} ms`));
    assert.equal(rec.sends.reduce((a, s) => a + s.bytes, 0), audio.length);
    assert.equal(clock.t - 1000, 2050, 'the send ends once all the audio time has passed');
  });

  it('realtime on a slow writer: no extra wait when the writes already took the time', async () => {
    const clock = fakeClock();
    const sends: number[] = [];
    const slow = { write: async () => { sends.push(clock.t); clock.t += 150; }, end: () => undefined };
    await sendPcm(slow, audio, frameBytes, rate, 100, true, clock);
    // writes take 150 ms per 100 ms chunk: the sender is behind and never sleeps
    sends.forEach((at, k) => assert.equal(at - 1000, k * 150));
  });

  it('not realtime: everything is sent without waiting', async () => {
    const clock = fakeClock();
    const rec = recorder(clock);
    await sendPcm(rec.stream, audio, frameBytes, rate, 100, false, clock);
    assert.equal(rec.sends.length, 21);
    assert.ok(rec.sends.every((s) => s.at === 1000));
  });
});
