/** Minimal reader for 16-bit PCM mono WAV files (the benchmark's own inputs). */
import * as fs from 'node:fs';

export function readWavMono16(file: string): { sampleRate: number; samples: Float32Array } {
  const buf = fs.readFileSync(file);
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not a RIFF/WAVE file`);
  let off = 12;
  let sampleRate = 0;
  let channels = 0;
  let bits = 0;
  let format = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    const body = off + 8;
    if (id === 'fmt ') {
      format = buf.readUInt16LE(body);
      channels = buf.readUInt16LE(body + 2);
      sampleRate = buf.readUInt32LE(body + 4);
      bits = buf.readUInt16LE(body + 14);
    } else if (id === 'data') {
      if ((format !== 1 && format !== 0xfffe) || bits !== 16 || channels !== 1) {
        throw new Error(`${file}: expected 16-bit PCM mono, got format ${format}, ${bits} bits, ${channels} channels`);
      }
      const n = Math.min(size, buf.length - body) >> 1;
      const samples = new Float32Array(n);
      for (let i = 0; i < n; i++) samples[i] = buf.readInt16LE(body + 2 * i) / 32768;
      return { sampleRate, samples };
    }
    off = body + size + (size & 1);
  }
  throw new Error(`${file}: no data chunk`);
}
