/**
 * Malformed input never crashes, aborts or hangs the process, and always gives the same
 * stable error code. Every case runs in this process (a crash would kill the test runner),
 * from a path and from a Buffer, and once more in a child process whose exit status is
 * checked. A seeded fuzz pass mutates valid files of every container.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { AudioError, AUDIO_ERROR_CODES, AudioSource, decodeAll, FileFrontend, OpenOptions, probe } from '../../src/audio';
import { decodeOutcome, rng, sox, testSignal, tmpFile, wavBytes, wavHeader } from './helpers';

/** 'OK' if the source opens and reads to the end, else the AudioError code. */
const outcome = decodeOutcome;

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'OK';
  } catch (e) {
    if (e instanceof AudioError) return e.code;
    throw e;
  }
}

// ---- the cases: files written once, expected codes ------------------------------------

const RATE = 22050;
const pcm16 = (seconds: number, channels = 1) => testSignal(Math.round(RATE * seconds), channels, RATE, 5);
const goodWav = () => wavBytes({ rate: RATE, channels: 1, bits: 16 }, pcm16(0.5));

function patched(buf: Buffer, at: number, write: (b: Buffer) => void): Buffer {
  const b = Buffer.from(buf);
  write(b.subarray(at));
  return b;
}

function buildCases(): { name: string; file: string; expect: string }[] {
  const cases: { name: string; bytes: Buffer | (() => Buffer); expect: string }[] = [];
  const wav = goodWav();
  // headers cut short
  cases.push({ name: 'WAV cut at 3 bytes', bytes: wav.subarray(0, 3), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV cut at 12 bytes', bytes: wav.subarray(0, 12), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV cut inside fmt', bytes: wav.subarray(0, 30), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV cut before data', bytes: wav.subarray(0, 40), expect: 'CORRUPT_AUDIO' });
  // lying sizes
  cases.push({ name: 'WAV header only (data size says more)', bytes: wav.subarray(0, 44), expect: 'CORRUPT_AUDIO' });
  // a data chunk cut short (or a length that lies): what is there is decoded, flagged truncated (test below)
  cases.push({ name: 'WAV truncated mid-data', bytes: wav.subarray(0, 44 + 2001), expect: 'OK' });
  cases.push({ name: 'WAV data size 0x7FFFFFF0 (huge)', bytes: patched(wav, 40, (b) => b.writeUInt32LE(0x7ffffff0, 0)), expect: 'OK' });
  cases.push({ name: 'WAV RIFF size larger than the file (data size right)', bytes: patched(wav, 4, (b) => b.writeUInt32LE(0x7ffffff0, 0)), expect: 'OK' });
  cases.push({ name: 'WAV data size 0xFFFFFFFF (streaming placeholder)', bytes: patched(patched(wav, 4, (b) => b.writeUInt32LE(0xffffffff, 0)), 40, (b) => b.writeUInt32LE(0xffffffff, 0)), expect: 'OK' });
  cases.push({ name: 'WAV with zero frames', bytes: wavHeader({ rate: RATE, channels: 1, bits: 16 }, 0), expect: 'EMPTY_AUDIO' });
  // impossible layouts
  cases.push({ name: 'WAV with 65535 channels', bytes: patched(wav, 22, (b) => b.writeUInt16LE(65535, 0)), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'WAV with 33 channels', bytes: wavBytes({ rate: RATE, channels: 33, bits: 16 }, new Float32Array(33 * 100)), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'WAV with 0 channels', bytes: patched(wav, 22, (b) => b.writeUInt16LE(0, 0)), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV at 0 Hz', bytes: patched(wav, 24, (b) => b.writeUInt32LE(0, 0)), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV at 1000 Hz', bytes: patched(wav, 24, (b) => b.writeUInt32LE(1000, 0)), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'WAV at 4 GHz', bytes: patched(wav, 24, (b) => b.writeUInt32LE(0xffffffff, 0)), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'WAV with 0 bits per sample', bytes: patched(wav, 34, (b) => b.writeUInt16LE(0, 0)), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'WAV holding MP3 (format tag 0x55)', bytes: patched(wav, 20, (b) => b.writeUInt16LE(0x55, 0)), expect: 'UNSUPPORTED_FORMAT' });
  // not audio
  cases.push({ name: 'zero-length file', bytes: Buffer.alloc(0), expect: 'EMPTY_AUDIO' });
  cases.push({ name: 'text with a .wav name', bytes: Buffer.from('this is not audio\n'.repeat(50)), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'JSON', bytes: Buffer.from('{"samples":[1,2,3]}'), expect: 'UNSUPPORTED_FORMAT' });
  cases.push({ name: 'all zeros', bytes: Buffer.alloc(10000), expect: 'UNSUPPORTED_FORMAT' });
  for (const seed of [1, 2, 3, 4, 5]) {
    const r = rng(seed);
    cases.push({ name: `random bytes #${seed}`, bytes: Buffer.from(Array.from({ length: 4096 }, () => Math.floor(r() * 256))), expect: 'UNSUPPORTED_FORMAT' });
  }
  // compressed formats cut short
  const flac = encoded('flac');
  cases.push({ name: 'FLAC cut at 20 bytes', bytes: flac.subarray(0, 20), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'FLAC cut in half', bytes: flac.subarray(0, flac.length >> 1), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'FLAC declaring 2^35 samples', bytes: flacWithTotalSamples(flac, 2 ** 35), expect: 'CORRUPT_AUDIO' });
  const mp3 = encoded('mp3');
  cases.push({ name: 'MP3 cut at 100 bytes', bytes: mp3.subarray(0, 100), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'MP3 cut in half', bytes: mp3.subarray(0, mp3.length >> 1), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'ID3 tag and nothing else', bytes: Buffer.concat([Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x0a', 'latin1'), Buffer.alloc(10)]), expect: 'CORRUPT_AUDIO' });
  const ogg = encoded('ogg');
  cases.push({ name: 'OGG cut at 60 bytes', bytes: ogg.subarray(0, 60), expect: 'CORRUPT_AUDIO' });
  const opus = encoded('opus');
  cases.push({ name: 'Ogg Opus cut at 60 bytes', bytes: opus.subarray(0, 60), expect: 'CORRUPT_AUDIO' });
  cases.push({ name: 'Ogg Opus with a damaged OpusHead', bytes: patched(opus, 28 + 9, (b) => b.writeUInt8(0, 0)), expect: 'CORRUPT_AUDIO' });

  return cases.map((c, i) => {
    const file = tmpFile(`malformed-${i}.wav`);
    fs.writeFileSync(file, typeof c.bytes === 'function' ? c.bytes() : c.bytes);
    return { name: c.name, file, expect: c.expect };
  });
}

const encodedCache = new Map<string, Buffer>();
/** A 1 s 22.05 kHz stereo test file in the given container. */
function encoded(kind: 'flac' | 'mp3' | 'ogg' | 'opus'): Buffer {
  let b = encodedCache.get(kind);
  if (!b) {
    const wav = tmpFile('fuzz-src.wav');
    fs.writeFileSync(wav, wavBytes({ rate: RATE, channels: 2, bits: 16 }, pcm16(1, 2)));
    const out = tmpFile(`fuzz-src.${kind}`);
    if (kind === 'mp3') execFileSync('lame', ['--quiet', '-b', '64', wav, out]);
    else if (kind === 'opus') execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wav, '-c:a', 'libopus', '-b:a', '32k', out]);
    else sox([wav, out]); // .ogg: Vorbis
    b = fs.readFileSync(out);
    encodedCache.set(kind, b);
  }
  return b;
}

/** Rewrites the 36-bit total-samples field of the STREAMINFO block (right after "fLaC"). */
function flacWithTotalSamples(flac: Buffer, total: number): Buffer {
  const b = Buffer.from(flac);
  // STREAMINFO body starts at 8; total samples: low 4 bits of byte 21, then bytes 22..25
  const hi = Math.floor(total / 2 ** 32) & 0xf;
  b[8 + 13] = (b[8 + 13]! & 0xf0) | hi;
  b.writeUInt32BE(total >>> 0, 8 + 14);
  return b;
}

// ---- tests ------------------------------------------------------------------------------

describe('malformed input gets a stable code and the process survives', () => {
  const cases = buildCases();

  it('in this process, from a path and from a Buffer (twice each)', async () => {
    for (const c of cases) {
      const buf = fs.readFileSync(c.file);
      for (let round = 0; round < 2; round++) {
        assert.equal(await outcome({ path: c.file }), c.expect, `${c.name} (path)`);
        assert.equal(await outcome({ buffer: buf }), c.expect, `${c.name} (buffer)`);
      }
      const probed = await codeOf(probe({ path: c.file }));
      // probe reads only the header: it may accept a file whose damage is further in
      if (probed !== 'OK') assert.equal(probed, c.expect, `${c.name} (probe)`);
    }
  });

  it('a WAV cut mid-data is decoded up to the cut and flagged truncated; a whole one is not', async () => {
    const wav = goodWav();
    const cut = wav.subarray(0, 44 + 10001); // 5000 frames and half of one, of 11025
    const info = await probe({ buffer: cut });
    assert.equal(info.truncated, true);
    assert.equal(info.frames, 5000);
    assert.equal((await probe({ buffer: wav })).truncated, false);
    const fa = await FileFrontend.open({ buffer: cut });
    try {
      assert.equal(fa.info.truncated, true);
      let steps = 0;
      for (let c = await fa.read(); c !== null; c = await fa.read()) steps += c[0]!.steps;
      assert.equal(steps, Math.ceil(5000 / RATE / 0.064), 'steps of the 5000 frames that are there');
    } finally {
      fa.close();
    }
  });

  it('in a child process (exit status checked)', () => {
    const script = `
      const a = require(${JSON.stringify(path.resolve(__dirname, '../../src/audio'))});
      (async () => {
        const out = [];
        for (const f of JSON.parse(process.argv[1])) {
          let fa;
          try { fa = await a.FileFrontend.open({ path: f }); while ((await fa.read()) !== null); out.push('OK'); }
          catch (e) { out.push(e.code || String(e)); }
          finally { if (fa) fa.close(); }
        }
        console.log(JSON.stringify(out));
      })();`;
    const res = spawnSync(process.execPath, ['-e', script, JSON.stringify(cases.map((c) => c.file))], { encoding: 'utf8', timeout: 60000 });
    assert.equal(res.signal, null, `child killed by ${res.signal}: ${res.stderr}`);
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), cases.map((c) => c.expect));
  });

  it('seeded fuzzing of WAV, FLAC, MP3, Ogg Vorbis and Ogg Opus files (bit flips, overwrites, truncation)', async () => {
    const r = rng(2024);
    const sources: [string, Buffer][] = [
      ['wav', wavBytes({ rate: RATE, channels: 2, bits: 16 }, pcm16(0.3, 2))],
      ['flac', encoded('flac')],
      ['mp3', encoded('mp3')],
      ['ogg', encoded('ogg')],
      ['opus', encoded('opus')],
    ];
    const codes = new Set<string>(['OK', ...AUDIO_ERROR_CODES]);
    for (const [kind, original] of sources) {
      for (let i = 0; i < 40; i++) {
        const b = Buffer.from(original);
        const mode = i % 4;
        const head = Math.min(b.length, 512); // most damage where the parsers are
        if (mode === 0) for (let k = 0; k < 8; k++) b[Math.floor(r() * head)]! ^= 1 << Math.floor(r() * 8);
        if (mode === 1) for (let k = 0; k < 16; k++) b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
        if (mode === 2) b.fill(Math.floor(r() * 256), Math.floor(r() * head), Math.floor(r() * head) + 16);
        const bytes = mode === 3 ? b.subarray(0, Math.floor(r() * b.length)) : b;
        const first = await outcome({ buffer: bytes });
        assert.ok(codes.has(first), `${kind} #${i}: ${first}`);
        assert.equal(await outcome({ buffer: bytes }), first, `${kind} #${i}: not deterministic`);
      }
    }
  });
});

describe('bad sources and options', () => {
  const file = tmpFile('options.wav');
  fs.writeFileSync(file, wavBytes({ rate: RATE, channels: 2, bits: 16 }, pcm16(10, 2)));

  it('INVALID_ARGUMENT for a malformed source, with a precise message', async () => {
    const bad: unknown[] = [undefined, null, 'file.wav', {}, { path: 1 }, { path: '' }, { buffer: 'abc' }, { buffer: [1, 2] }, { path: file, buffer: Buffer.alloc(4) }];
    for (const source of bad) {
      for (const p of [probe(source as AudioSource), FileFrontend.open(source as AudioSource), decodeAll(source as AudioSource)]) {
        await assert.rejects(p, (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT' && /source/.test(e.message), JSON.stringify(source));
      }
    }
  });

  it('INVALID_ARGUMENT / INVALID_CHANNEL for bad options', async () => {
    const cases: [OpenOptions, string][] = [
      [{ channel: 2 }, 'INVALID_CHANNEL'],
      [{ channel: 100000 }, 'INVALID_CHANNEL'],
      [{ channel: -1 }, 'INVALID_CHANNEL'],
      [{ channel: 0.5 }, 'INVALID_ARGUMENT'],
      [{ channel: '1' as unknown as number }, 'INVALID_ARGUMENT'],
      [{ chunkSeconds: 0 }, 'INVALID_ARGUMENT'],
      [{ chunkSeconds: -3 }, 'INVALID_ARGUMENT'],
      [{ chunkSeconds: NaN }, 'INVALID_ARGUMENT'],
      [{ chunkSeconds: 601 }, 'INVALID_ARGUMENT'],
      [{ maxDurationSec: 0 }, 'INVALID_ARGUMENT'],
      [{ maxDurationSec: -1 }, 'INVALID_ARGUMENT'],
      [{ maxDurationSec: '30' as unknown as number }, 'INVALID_ARGUMENT'],
      ['opts' as unknown as OpenOptions, 'INVALID_ARGUMENT'],
      [{ channel: 1, chunkSeconds: 0.5, maxDurationSec: Infinity }, 'OK'],
    ];
    for (const [opts, code] of cases) assert.equal(await outcome({ path: file }, opts), code, JSON.stringify(opts));
  });

  it('IO_ERROR for a missing file, a directory and a FIFO (without blocking)', async () => {
    assert.equal(await codeOf(probe({ path: tmpFile('does-not-exist.wav') })), 'IO_ERROR');
    assert.equal(await codeOf(probe({ path: path.dirname(file) })), 'IO_ERROR');
    const fifo = tmpFile('a.fifo');
    execFileSync('mkfifo', [fifo]);
    assert.equal(await codeOf(FileFrontend.open({ path: fifo })), 'IO_ERROR');
  });

  it('DURATION_LIMIT_EXCEEDED from the header (frames / rate * analysed channels)', async () => {
    // 10 s stereo = 20 s analysed
    assert.equal(await outcome({ path: file }, { maxDurationSec: 19 }), 'DURATION_LIMIT_EXCEEDED');
    assert.equal(await outcome({ path: file }, { maxDurationSec: 21 }), 'OK');
    assert.equal(await outcome({ path: file }, { maxDurationSec: 11, channel: 1 }), 'OK');
    const e = await FileFrontend.open({ path: file }, { maxDurationSec: 5 }).catch((x: unknown) => x);
    assert.ok(e instanceof AudioError && /limit/.test(e.message));
  });

  it('DURATION_LIMIT_EXCEEDED while decoding when the header does not tell the length', async () => {
    // FLAC written to a pipe declares no length: only decoding can enforce the limit.
    const flac = tmpFile('nolength.flac');
    fs.writeFileSync(flac, execFileSync('sh', ['-c', `ffmpeg -v error -i '${file}' -f flac - | cat`], { maxBuffer: 1 << 26 }));
    assert.equal((await probe({ path: flac })).frames, -1);
    const fa = await FileFrontend.open({ path: flac }, { maxDurationSec: 12, chunkSeconds: 1 });
    let steps = 0;
    const err = await (async () => {
      for (;;) {
        const c = await fa.read();
        if (!c) return null;
        steps += c[0]!.steps;
      }
    })().catch((x: unknown) => x);
    fa.close();
    assert.ok(err instanceof AudioError && err.code === 'DURATION_LIMIT_EXCEEDED', String(err));
    assert.ok(steps > 0 && steps * 0.064 <= 12, `${steps} steps delivered before the limit`);
    assert.equal(await outcome({ path: flac }, { maxDurationSec: 21 }), 'OK');
  });

  it('decodeAll refuses more than 10 minutes', async () => {
    const long = tmpFile('eleven-minutes.wav');
    // a header declaring 11 min of 8 kHz mono (the data is there: sparse file of zeros)
    const dataBytes = 8000 * 2 * 660;
    fs.writeFileSync(long, wavHeader({ rate: 8000, channels: 1, bits: 16 }, dataBytes));
    fs.truncateSync(long, 44 + dataBytes);
    assert.equal(await codeOf(decodeAll({ path: long })), 'DURATION_LIMIT_EXCEEDED');
  });
});
