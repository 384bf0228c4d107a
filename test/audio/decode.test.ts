/**
 * Decoding (decodeAll / probe) against ffmpeg as the reference decoder:
 * - WAV (8-bit unsigned, 16/24/32-bit int, 32/64-bit float, WAVE_FORMAT_EXTENSIBLE) and FLAC
 *   must be sample-exact (bit-identical float32) at 8/22.05/44.1/48 kHz, mono and stereo;
 * - MP3 is decoded by libmpg123 here and by ffmpeg's own decoder there. Both honour the LAME
 *   gapless tag, so lengths must be equal and samples aligned; the tolerance is
 *   max |difference| <= 1e-4 (-80 dBFS) and SNR >= 90 dB (float decoders differ in rounding
 *   only; measured ~3e-6 and ~120 dB). See docs/audio.md.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';
import { decodeAll, probe } from '../../src/audio';
import { ffmpegDecode, firstDifference, sox, testSignal, tmpFile, wavBytes, WavSpec } from './helpers';

const RATES = [8000, 22050, 44100, 48000];

async function assertExact(file: string, expect: { rate: number; channels: number; format: string; subtype?: string }): Promise<void> {
  const ref = ffmpegDecode(file);
  const { info, samples } = await decodeAll({ path: file });
  assert.equal(info.sampleRate, expect.rate);
  assert.equal(info.channels, expect.channels);
  assert.equal(info.format, expect.format);
  if (expect.subtype) assert.equal(info.subtype, expect.subtype);
  assert.equal(info.frames, ref.length / expect.channels, 'declared frames');
  assert.ok(Math.abs(info.durationSec - info.frames / info.sampleRate) < 1e-12);
  assert.equal(samples.length, ref.length, 'decoded length');
  const d = firstDifference(samples, ref);
  assert.equal(d, -1, `first difference at sample ${d}: ${samples[d]} vs ffmpeg ${ref[d]}`);
  // the same bytes from memory decode identically
  const fromBuffer = await decodeAll({ buffer: fs.readFileSync(file) });
  assert.equal(firstDifference(fromBuffer.samples, samples), -1, 'buffer source differs from path source');
}

describe('WAV decoding is sample-exact (vs ffmpeg)', () => {
  const encodings: { name: string; spec: Omit<WavSpec, 'rate' | 'channels'>; subtype: string }[] = [
    { name: 'PCM u8', spec: { bits: 8 }, subtype: 'PCM_U8' },
    { name: 'PCM s16', spec: { bits: 16 }, subtype: 'PCM_16' },
    { name: 'PCM s24', spec: { bits: 24 }, subtype: 'PCM_24' },
    { name: 'PCM s32', spec: { bits: 32 }, subtype: 'PCM_32' },
    { name: 'float32', spec: { bits: 32, float: true }, subtype: 'FLOAT' },
    { name: 'float64', spec: { bits: 64, float: true }, subtype: 'DOUBLE' },
    { name: 'extensible s16', spec: { bits: 16, extensible: true }, subtype: 'PCM_16' },
    { name: 'extensible s24', spec: { bits: 24, extensible: true }, subtype: 'PCM_24' },
    { name: 'extensible float32', spec: { bits: 32, float: true, extensible: true }, subtype: 'FLOAT' },
  ];
  for (const enc of encodings) {
    it(`${enc.name}: 8/22.05/44.1/48 kHz, mono and stereo`, async () => {
      for (const rate of RATES) {
        for (const channels of [1, 2]) {
          const file = tmpFile(`dec-${enc.name.replace(/ /g, '_')}-${rate}-${channels}.wav`);
          const frames = Math.round(rate * 0.37) + 3;
          fs.writeFileSync(file, wavBytes({ ...enc.spec, rate, channels }, testSignal(frames, channels, rate, rate + channels)));
          await assertExact(file, { rate, channels, format: 'WAV', subtype: enc.subtype });
        }
      }
    });
  }

  it('WAV files written by sox (its own headers, extensible for > 16 bits)', async () => {
    for (const [bits, enc] of [[8, 'unsigned-integer'], [16, 'signed-integer'], [24, 'signed-integer'], [32, 'signed-integer'], [32, 'floating-point']] as const) {
      for (const channels of [1, 2]) {
        const file = tmpFile(`sox-${bits}-${enc}-${channels}.wav`);
        sox(['-n', '-r', '44100', '-c', String(channels), '-b', String(bits), '-e', enc, file, 'synth', '0.3', 'sine', '440', 'pinknoise', 'gain', '-3']);
        await assertExact(file, { rate: 44100, channels, format: 'WAV' });
      }
    }
  });

  it('float WAV samples beyond full scale are passed through, not clipped', async () => {
    const file = tmpFile('loud-float.wav');
    const x = new Float32Array([0, 1.5, -2, 0.25, 3.75, -1]);
    fs.writeFileSync(file, wavBytes({ rate: 16000, channels: 1, bits: 32, float: true }, x));
    const { samples } = await decodeAll({ path: file });
    assert.deepEqual(Array.from(samples), Array.from(x));
  });
});

describe('FLAC decoding is sample-exact (vs ffmpeg)', () => {
  for (const bits of [16, 24]) {
    it(`${bits}-bit: 8/22.05/44.1/48 kHz, mono and stereo`, async () => {
      for (const rate of RATES) {
        for (const channels of [1, 2]) {
          const wav = tmpFile(`flac-src-${bits}-${rate}-${channels}.wav`);
          const flac = tmpFile(`flac-${bits}-${rate}-${channels}.flac`);
          fs.writeFileSync(wav, wavBytes({ rate, channels, bits }, testSignal(Math.round(rate * 0.41), channels, rate, 7 + rate)));
          sox([wav, flac]);
          await assertExact(flac, { rate, channels, format: 'FLAC', subtype: bits === 16 ? 'PCM_16' : 'PCM_24' });
        }
      }
    });
  }

  it('a FLAC stream without a declared length (written to a pipe) reports frames -1', async () => {
    const wav = tmpFile('pipe-src.wav');
    fs.writeFileSync(wav, wavBytes({ rate: 22050, channels: 2, bits: 16 }, testSignal(22050, 2, 22050)));
    const flac = tmpFile('pipe.flac');
    const { execFileSync } = await import('node:child_process');
    fs.writeFileSync(flac, execFileSync('sh', ['-c', `ffmpeg -v error -i '${wav}' -f flac - | cat`], { maxBuffer: 1 << 26 }));
    const info = await probe({ path: flac });
    assert.equal(info.frames, -1);
    assert.equal(info.durationSec, -1);
    const { samples, info: after } = await decodeAll({ path: flac });
    assert.equal(samples.length, 22050 * 2);
    assert.equal(after.frames, 22050, 'decodeAll reports the decoded length');
  });
});

/** max |a - b| and SNR (dB) of a against the reference b. */
function compare(a: Float32Array, b: Float32Array): { maxAbs: number; snrDb: number } {
  let maxAbs = 0, err = 0, sig = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i]! - b[i]!;
    maxAbs = Math.max(maxAbs, Math.abs(d));
    err += d * d;
    sig += b[i]! * b[i]!;
  }
  return { maxAbs, snrDb: 10 * Math.log10(sig / Math.max(err, 1e-30)) };
}

describe('MP3 decoding matches ffmpeg within tolerance', () => {
  const cases: { name: string; rate: number; channels: number; lame: string[] }[] = [
    { name: 'CBR 128k stereo 44.1k', rate: 44100, channels: 2, lame: ['-b', '128'] },
    { name: 'VBR V2 stereo 48k', rate: 48000, channels: 2, lame: ['-V', '2'] },
    { name: 'CBR 64k mono 22.05k', rate: 22050, channels: 1, lame: ['-b', '64'] },
    { name: 'CBR 32k mono 8k (MPEG 2.5)', rate: 8000, channels: 1, lame: ['-b', '32'] },
    { name: 'VBR without Xing/LAME tag', rate: 44100, channels: 2, lame: ['-V', '4', '-t'] },
    { name: 'CBR with an ID3v2 tag', rate: 44100, channels: 1, lame: ['-b', '96', '--add-id3v2', '--tt', 'auris test'] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const wav = tmpFile(`mp3-src-${c.rate}-${c.channels}-${c.lame.join('')}.wav`);
      const mp3 = wav.replace(/\.wav$/, '.mp3');
      fs.writeFileSync(wav, wavBytes({ rate: c.rate, channels: c.channels, bits: 16 }, testSignal(Math.round(c.rate * 2.3), c.channels, c.rate, 3)));
      const { execFileSync } = await import('node:child_process');
      execFileSync('lame', ['--quiet', ...c.lame, wav, mp3]);
      const ref = ffmpegDecode(mp3);
      const { info, samples } = await decodeAll({ path: mp3 });
      assert.equal(info.format, 'MP3');
      assert.equal(info.subtype, 'MPEG_LAYER_III');
      assert.equal(info.sampleRate, c.rate);
      assert.equal(info.channels, c.channels);
      assert.equal(samples.length, ref.length, 'same length as ffmpeg (gapless trimming / full scan)');
      assert.equal(info.frames, samples.length / c.channels, 'declared length is exact');
      const { maxAbs, snrDb } = compare(samples, ref);
      assert.ok(maxAbs <= 1e-4, `max |diff| ${maxAbs}`);
      assert.ok(snrDb >= 90, `SNR ${snrDb.toFixed(1)} dB`);
    });
  }
});

describe('other containers', () => {
  it('OGG Vorbis and Opus decode to the same samples as ffmpeg (length and content, per channel)', async () => {
    const wav = tmpFile('ogg-src.wav');
    fs.writeFileSync(wav, wavBytes({ rate: 48000, channels: 2, bits: 16 }, testSignal(48000, 2, 48000)));
    const { execFileSync } = await import('node:child_process');
    for (const [codec, subtype] of [['libvorbis', 'VORBIS'], ['libopus', 'OPUS']] as const) {
      const ogg = tmpFile(`test-${codec}.ogg`);
      execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wav, '-c:a', codec, ogg]);
      const { info, samples } = await decodeAll({ path: ogg });
      assert.equal(info.format, 'OGG');
      assert.equal(info.subtype, subtype);
      assert.equal(info.channels, 2);
      const ref = ffmpegDecode(ogg, codec === 'libopus' ? 'libopus' : undefined);
      assert.equal(samples.length, ref.length, `${codec}: same length as ffmpeg`);
      // Same decoded content (interleaving included: the channels carry different tones).
      const { maxAbs, snrDb } = compare(samples, ref);
      assert.ok(maxAbs <= 1e-4, `${codec}: max |diff| ${maxAbs}`);
      assert.ok(snrDb >= 90, `${codec}: SNR ${snrDb.toFixed(1)} dB against ffmpeg`);
    }
  });

  it('Ogg Opus decodes at 48 kHz to ffmpeg\'s length, declared length exact', async () => {
    const opus = tmpFile('test-16k.opus');
    sox(['-n', '-r', '16000', '-c', '1', '-b', '16', tmpFile('opus-src.wav'), 'synth', '1.3', 'sine', '300']);
    const { execFileSync } = await import('node:child_process');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', tmpFile('opus-src.wav'), '-c:a', 'libopus', '-b:a', '24k', opus]);
    const { info, samples } = await decodeAll({ path: opus });
    assert.equal(info.format, 'OGG');
    assert.equal(info.subtype, 'OPUS');
    assert.equal(info.sampleRate, 48000);
    assert.equal(info.frames, samples.length, 'declared length (last granule minus pre-skip) is what decodes');
    // ffmpeg with libopus (what opusfile wraps): its own Opus decoder differs in SILK mode (27 dB here).
    const ref = ffmpegDecode(opus, 'libopus');
    assert.equal(samples.length, ref.length);
    assert.equal(samples.length, 1.3 * 48000);
    const { maxAbs, snrDb } = compare(samples, ref);
    assert.ok(maxAbs <= 1e-4 && snrDb >= 90, `max |diff| ${maxAbs}, SNR ${snrDb.toFixed(1)} dB against ffmpeg`);
  });

  it('Ogg Opus whose last granule position runs past its packets decodes, as ffmpeg does', async () => {
    // Seen in real files (about 2 % of a corpus of short words and excerpts): libsndfile 1.2
    // rejected them as "malformed"; opusfile and ffmpeg decode the packets that are there.
    const src = tmpFile('opus-short.wav');
    sox(['-n', '-r', '16000', '-c', '1', '-b', '16', src, 'synth', '0.5', 'sine', '440']);
    const good = tmpFile('opus-short.opus');
    const { execFileSync } = await import('node:child_process');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', src, '-c:a', 'libopus', '-b:a', '24k', good]);
    // one packet more than the stream holds: no end trimming is possible, the granule is simply wrong
    const bad = withLastGranule(fs.readFileSync(good), (g) => g + 960n);
    const file = tmpFile('opus-long-granule.opus');
    fs.writeFileSync(file, bad);
    const { info, samples } = await decodeAll({ path: file });
    assert.equal(info.subtype, 'OPUS');
    assert.equal(samples.length, ffmpegDecode(file).length);
    assert.ok(samples.length >= ffmpegDecode(good).length, 'all the audio of the well-formed file');
    // a stream cut inside its last page is still decodable up to the pages that are whole
    const cut = await decodeAll({ buffer: bad.subarray(0, bad.length - 40) }).then(() => 'OK', (e: { code?: string }) => e.code);
    assert.ok(cut === 'OK' || cut === 'CORRUPT_AUDIO' || cut === 'EMPTY_AUDIO', String(cut));
  });

  it('AIFF decodes sample-exactly', async () => {
    const aiff = tmpFile('test.aiff');
    sox(['-n', '-r', '22050', '-c', '2', '-b', '16', aiff, 'synth', '0.5', 'sine', '300', 'sine', '700']);
    await assertExact(aiff, { rate: 22050, channels: 2, format: 'AIFF', subtype: 'PCM_16' });
  });

  it('the container is recognised from the bytes, not the file name', async () => {
    const flacAsWav = tmpFile('really-flac.wav');
    sox(['-n', '-r', '16000', '-c', '1', '-b', '16', flacAsWav.replace(/\.wav$/, '.flac'), 'synth', '0.2', 'sine', '500']);
    fs.renameSync(flacAsWav.replace(/\.wav$/, '.flac'), flacAsWav);
    assert.equal((await probe({ path: flacAsWav })).format, 'FLAC');
  });
});

/** The Ogg file with the granule position of its last page rewritten (page CRC recomputed). */
function withLastGranule(ogg: Buffer, f: (g: bigint) => bigint): Buffer {
  const b = Buffer.from(ogg);
  let last = -1;
  for (let i = 0; i + 27 <= b.length; ) {
    assert.equal(b.toString('latin1', i, i + 4), 'OggS', `page at ${i}`);
    const segs = b[i + 26]!;
    let size = 0;
    for (let k = 0; k < segs; k++) size += b[i + 27 + k]!;
    last = i;
    i += 27 + segs + size;
  }
  const segs = b[last + 26]!;
  let size = 0;
  for (let k = 0; k < segs; k++) size += b[last + 27 + k]!;
  b.writeBigInt64LE(f(b.readBigInt64LE(last + 6)), last + 6);
  b.writeUInt32LE(0, last + 22);
  b.writeUInt32LE(oggCrc(b.subarray(last, last + 27 + segs + size)), last + 22);
  return b;
}

/** Ogg's page checksum: CRC-32, polynomial 0x04c11db7, not reflected, initial value 0. */
function oggCrc(page: Buffer): number {
  let crc = 0;
  for (const byte of page) {
    crc ^= byte << 24;
    for (let k = 0; k < 8; k++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc >>> 0;
}
