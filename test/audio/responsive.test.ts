/**
 * A long file (10 minutes) is analysed off the main thread: a setInterval keeps ticking while
 * FileFrontend's reads are pending. How long the event loop stalls and how much memory grows are
 * measured by `npm run bench:responsiveness` (bench/responsiveness), not asserted here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FileFrontend } from '../../src/audio';
import { tmpFile, writeLongWav } from './helpers';

describe('long files', () => {
  it('timers fire while a read of a 10-minute file is pending (decoding runs off the main thread)', async () => {
    const rate = 44100, seconds = 600;
    const file = tmpFile('ten-minutes.wav');
    writeLongWav(file, seconds, rate, 2);

    let ticksWhileReading = 0;
    let reading = false;
    const timer = setInterval(() => {
      if (reading) ticksWhileReading++;
    }, 5);

    const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 30 });
    let steps = 0, reads = 0;
    try {
      for (;;) {
        reading = true;
        const chunks = await fa.read();
        reading = false;
        if (!chunks) break;
        reads++;
        assert.equal(chunks.length, 2);
        steps += chunks[0]!.steps;
      }
    } finally {
      fa.close();
      clearInterval(timer);
    }

    assert.equal(steps, Math.ceil((seconds * 16000) / 1024), 'every step of the file');
    assert.ok(reads >= seconds / 30, `${reads} reads of at most 30 s`);
    // Had a read decoded on this thread, no timer could fire while it was pending.
    assert.ok(ticksWhileReading > 0, `${ticksWhileReading} ticks during ${reads} pending reads`);
  });
});
