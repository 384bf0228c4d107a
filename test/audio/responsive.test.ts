/**
 * A long file (10 minutes) is analysed off the main thread: a setInterval keeps ticking
 * while FileAnalyzer reads it, and memory stays bounded (chunk buffers only).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { FileAnalyzer } from '../../src/audio';
import { testSignal, tmpFile, wavBytes, wavHeader } from './helpers';

/** Writes a WAV of `seconds` by repeating one second of a test signal (no big buffer). */
function writeLongWav(file: string, seconds: number, rate: number, channels: number): void {
  const second = wavBytes({ rate, channels, bits: 16 }, testSignal(rate, channels, rate, 21)).subarray(44);
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, wavHeader({ rate, channels, bits: 16 }, second.length * seconds));
    for (let s = 0; s < seconds; s++) fs.writeSync(fd, second);
  } finally {
    fs.closeSync(fd);
  }
}

describe('long files', () => {
  it('the event loop keeps ticking while a 10-minute file is analysed, memory stays bounded', async () => {
    const rate = 44100, seconds = 600;
    const file = tmpFile('ten-minutes.wav');
    writeLongWav(file, seconds, rate, 2);

    const rss0 = process.memoryUsage().rss;
    let rssMax = rss0;
    let ticks = 0;
    let ticksWhileReading = 0;
    let reading = false;
    let last = performance.now();
    let maxGap = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
      if (reading) ticksWhileReading++;
      rssMax = Math.max(rssMax, process.memoryUsage().rss);
    }, 5);

    const started = performance.now();
    const fa = await FileAnalyzer.open({ path: file }, { chunkSeconds: 30 });
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
    const elapsed = performance.now() - started;

    assert.equal(steps, Math.ceil((seconds * 16000) / 1024), 'every step of the file');
    assert.ok(reads >= 20, `${reads} reads of 30 s`);
    assert.ok(ticks >= elapsed / 5 / 4, `only ${ticks} ticks in ${elapsed.toFixed(0)} ms`);
    // decoding happens off the main thread: timers fire while a read() is pending
    assert.ok(ticksWhileReading >= reads, `${ticksWhileReading} ticks during ${reads} pending reads`);
    assert.ok(maxGap < 250, `event loop blocked for ${maxGap.toFixed(0)} ms`);
    const growthMb = (rssMax - rss0) / 2 ** 20;
    // 10 min of stereo 44.1 kHz is 100 MB of PCM (200 MB as float): a bounded reader stays far below.
    assert.ok(growthMb < 80, `RSS grew by ${growthMb.toFixed(0)} MB`);
  });
});
