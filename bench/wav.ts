/** Minimal header reader for 16-bit PCM mono WAV files (the benchmark's own inputs). */
import * as fs from 'node:fs';

/** Where the samples of a 16-bit PCM mono WAV are. */
export function wavLayout(file: string): { sampleRate: number; dataOffset: number; dataBytes: number } {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(12);
    fs.readSync(fd, head, 0, 12, 0);
    if (head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not a RIFF/WAVE file`);
    const size = fs.fstatSync(fd).size;
    let off = 12;
    let sampleRate = 0;
    let channels = 0;
    let bits = 0;
    let format = 0;
    const ch = Buffer.alloc(16);
    while (off + 8 <= size) {
      fs.readSync(fd, ch, 0, 8, off);
      const id = ch.toString('ascii', 0, 4);
      const len = ch.readUInt32LE(4);
      if (id === 'fmt ') {
        fs.readSync(fd, ch, 0, 16, off + 8);
        format = ch.readUInt16LE(0);
        channels = ch.readUInt16LE(2);
        sampleRate = ch.readUInt32LE(4);
        bits = ch.readUInt16LE(14);
      } else if (id === 'data') {
        if ((format !== 1 && format !== 0xfffe) || bits !== 16 || channels !== 1) {
          throw new Error(`${file}: expected 16-bit PCM mono, got format ${format}, ${bits} bits, ${channels} channels`);
        }
        return { sampleRate, dataOffset: off + 8, dataBytes: Math.min(len, size - off - 8) & ~1 };
      }
      off += 8 + len + (len & 1);
    }
    throw new Error(`${file}: no data chunk`);
  } finally {
    fs.closeSync(fd);
  }
}
