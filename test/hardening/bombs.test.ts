/**
 * Resource bombs (docs/reliability.md): files whose headers claim absurd lengths, channel
 * counts, sample rates or frame sizes fail fast with a stable code, before anything is sized
 * from the header, and with bounded memory. Every input is generated here (sox/lame for the
 * valid bases, then patched). Memory: the native front-end cases run in a child process whose
 * address space is capped (ulimit -v, ADDRESS_SPACE_CAP_KIB): a 100-hour claim decoded or a
 * buffer sized from a header would need GBs, fail to allocate and crash or fail the child. No
 * memory figure is measured or asserted. Then the same bombs through the REST API: the job
 * fails with the code, the server lives.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { AudioError, decodeAll, probe, type AudioSource } from '../../src/audio';
import type { AurisServer } from '../../src/http/server';
import { decodeOutcome } from '../audio/helpers';
import { createJob, KEY_A, startServer, tempDir, waitForJob } from '../http/helpers';

/**
 * The address space of the child that decodes the bombs: node, the addon and its threads need
 * about 0.8-1 GiB of it (with MALLOC_ARENA_MAX=2, so the count of malloc arenas does not grow
 * with the cores); a 100-hour claim at 8 kHz 16-bit alone is 5.8 GB.
 */
const ADDRESS_SPACE_CAP_KIB = 1536 * 1024;
/** Set in the capped child: it runs only the native front-end cases. */
const CAPPED = process.env['AURIS_BOMBS_CAPPED'] === '1';
const dir = tempDir('auris-bombs-');

function gen(name: string, ...soxArgs: string[]): Buffer {
  const file = `${dir.path}/${name}`;
  execFileSync('sox', ['-V1', '-n', ...soxArgs.slice(0, -1), file, ...soxArgs.slice(-1)[0].split(' ')]);
  return readFileSync(file);
}
function lame(wav: Buffer, name: string, ...args: string[]): Buffer {
  const src = `${dir.path}/${name}.wav`;
  writeFileSync(src, wav);
  execFileSync('lame', ['--quiet', ...args, src, `${dir.path}/${name}`]);
  return readFileSync(`${dir.path}/${name}`);
}

/** 'OK' or the AudioError code of open + read to the end. */
const outcome = (source: AudioSource, maxDurationSec = 3600): Promise<string> => decodeOutcome(source, { maxDurationSec });

interface Bomb {
  name: string;
  bytes: () => Buffer;
  expect: string | string[];
  /** maxDurationSec of the analysis (default 3600). */
  limit?: number;
  /** Also expected from decodeAll (10-minute limit), when different. */
  decodeAll?: string | string[];
}

function wavBase(rate = 8000, channels = 1, seconds = 0.5): Buffer {
  return gen(`base-${rate}-${channels}-${seconds}.wav`, '-r', String(rate), '-c', String(channels), '-b', '16', 'synth ' + seconds + ' sine 440');
}
function patch(buf: Buffer, at: number, fn: (b: Buffer) => void): Buffer {
  const b = Buffer.from(buf);
  fn(b.subarray(at));
  return b;
}

const bombs: Bomb[] = [
  // declared length
  // A WAV length beyond the file is a truncated file: only the bytes that are there are decoded
  // (TRUNCATED_AUDIO warning on the job), nothing is sized by the claim.
  { name: 'WAV data chunk claiming 100 hours (4 GB at 8 kHz 16-bit... beyond the file)', bytes: () => patch(wavBase(), 40, (b) => b.writeUInt32LE(0xfffffff0, 0)), expect: 'OK' },
  {
    name: 'RF64 ds64 claiming 100 hours at 384 kHz x 32 channels',
    bytes: () => {
      const w = wavBase();
      const rf = Buffer.alloc(w.length + 36);
      rf.write('RF64', 0);
      rf.writeUInt32LE(0xffffffff, 4);
      rf.write('WAVE', 8);
      rf.write('ds64', 12);
      rf.writeUInt32LE(28, 16);
      rf.writeBigUInt64LE(BigInt(2) ** BigInt(40), 20); // riff size
      rf.writeBigUInt64LE(BigInt(100 * 3600 * 384000 * 32 * 2), 28); // data size
      rf.writeBigUInt64LE(BigInt(100 * 3600 * 384000), 36); // sample count
      w.copy(rf, 48, 12); // fmt + data chunks of the base
      rf.writeUInt32LE(0xffffffff, 76); // data chunk size (at 40 in the base, 36 bytes later here) -> use ds64
      return rf;
    },
    expect: ['OK', 'CORRUPT_AUDIO', 'DURATION_LIMIT_EXCEEDED'],
  },
  {
    name: 'FLAC STREAMINFO claiming 100 hours',
    bytes: () => {
      const f = gen('base.flac', '-r', '8000', '-c', '1', '-b', '16', 'synth 0.5 sine 440');
      // STREAMINFO at 8: block header 4 bytes, then 18 bytes: total samples = low 36 bits of bytes 13..17 of the block body
      const b = Buffer.from(f);
      const body = 8;
      const total = BigInt(100 * 3600 * 8000);
      b[body + 13] = (b[body + 13] & 0xf0) | Number((total >> BigInt(32)) & BigInt(0x0f));
      b.writeUInt32BE(Number(total & BigInt(0xffffffff)), body + 14);
      return b;
    },
    expect: 'DURATION_LIMIT_EXCEEDED',
    decodeAll: 'DURATION_LIMIT_EXCEEDED',
  },
  {
    name: 'MP3 Xing/Info tag claiming 2^31 frames (~1500 hours)',
    bytes: () => {
      const m = lame(gen('mp3base.wav', '-r', '44100', '-c', '1', '-b', '16', 'synth 0.5 sine 440'), 'xing.mp3', '-b', '128');
      let at = m.indexOf('Info');
      if (at < 0) at = m.indexOf('Xing');
      assert.ok(at > 0, 'LAME wrote a Xing/Info frame');
      const b = Buffer.from(m);
      b.writeUInt32BE(b.readUInt32BE(at + 4) | 1, at + 4); // frames field present
      b.writeUInt32BE(0x7fffffff, at + 8);
      return b;
    },
    expect: ['DURATION_LIMIT_EXCEEDED', 'CORRUPT_AUDIO'],
    decodeAll: ['DURATION_LIMIT_EXCEEDED', 'CORRUPT_AUDIO'],
  },
  {
    name: 'WAV with the streaming placeholder size and more audio than the limit (checked while decoding)',
    bytes: () => patch(patch(wavBase(8000, 1, 40), 4, (b) => b.writeUInt32LE(0xffffffff, 0)), 40, (b) => b.writeUInt32LE(0xffffffff, 0)),
    expect: 'DURATION_LIMIT_EXCEEDED',
    limit: 30,
  },
  // channel counts
  { name: 'WAV with 65535 channels', bytes: () => patch(wavBase(), 22, (b) => b.writeUInt16LE(65535, 0)), expect: 'UNSUPPORTED_FORMAT' },
  {
    name: 'AIFF with 65535 channels',
    bytes: () => {
      const a = gen('base.aiff', '-r', '8000', '-c', '1', '-b', '16', 'synth 0.2 sine 440');
      const at = a.indexOf('COMM');
      return patch(a, at + 8, (b) => b.writeUInt16BE(65535, 0));
    },
    expect: ['UNSUPPORTED_FORMAT', 'CORRUPT_AUDIO'],
  },
  {
    name: 'AU with 2^31 channels',
    bytes: () => patch(gen('base.au', '-r', '8000', '-c', '1', '-b', '16', 'synth 0.2 sine 440'), 20, (b) => b.writeUInt32BE(0x7fffffff, 0)),
    expect: ['UNSUPPORTED_FORMAT', 'CORRUPT_AUDIO'],
  },
  // sample rates
  { name: 'WAV at 384001 Hz', bytes: () => patch(wavBase(), 24, (b) => b.writeUInt32LE(384001, 0)), expect: 'UNSUPPORTED_FORMAT' },
  { name: 'WAV at 7999 Hz', bytes: () => patch(wavBase(), 24, (b) => b.writeUInt32LE(7999, 0)), expect: 'UNSUPPORTED_FORMAT' },
  { name: 'WAV at 2^31 Hz', bytes: () => patch(wavBase(), 24, (b) => b.writeUInt32LE(0x80000000, 0)), expect: 'UNSUPPORTED_FORMAT' },
  { name: 'AU at 4 GHz', bytes: () => patch(gen('base2.au', '-r', '8000', '-c', '1', '-b', '16', 'synth 0.2 sine 440'), 16, (b) => b.writeUInt32BE(0xffffffff, 0)), expect: ['UNSUPPORTED_FORMAT', 'CORRUPT_AUDIO'] },
  // block / frame sizes
  { name: 'WAV block align 65535 (huge frames)', bytes: () => patch(wavBase(), 32, (b) => b.writeUInt16LE(65535, 0)), expect: ['CORRUPT_AUDIO', 'UNSUPPORTED_FORMAT', 'OK'] },
  { name: 'WAV 65535 bits per sample', bytes: () => patch(wavBase(), 34, (b) => b.writeUInt16LE(65535, 0)), expect: ['CORRUPT_AUDIO', 'UNSUPPORTED_FORMAT'] },
  {
    name: 'MPEG stream of maximum-size frames (layer I 448 kbps at 8 kHz... headers only, garbage payload)',
    bytes: () => {
      // MPEG-1 layer III 320 kbps 32 kHz: 1440-byte frames, payload random; 2000 frames.
      const hdr = Buffer.from([0xff, 0xfb, 0xe8, 0xc4]);
      const frame = 144 * 320000 / 32000;
      const out = Buffer.alloc(frame * 2000);
      let s = 12345;
      for (let i = 0; i < out.length; i++) out[i] = (s = (s * 1103515245 + 12345) >>> 0) >>> 24;
      for (let f = 0; f < 2000; f++) hdr.copy(out, f * frame);
      return out;
    },
    expect: ['OK', 'CORRUPT_AUDIO'],
  },
  {
    name: 'MPEG free-format / reserved headers only',
    bytes: () => {
      const out = Buffer.alloc(64 * 1024);
      for (let i = 0; i < out.length; i += 4) Buffer.from([0xff, 0xfb, 0x0c, 0x00]).copy(out, i); // bitrate index 0 = free format
      return out;
    },
    expect: ['UNSUPPORTED_FORMAT', 'CORRUPT_AUDIO', 'EMPTY_AUDIO'],
  },
  {
    name: 'ID3v2 tag claiming 256 MB',
    bytes: () => {
      const b = Buffer.alloc(4096);
      b.write('ID3', 0);
      b[3] = 4;
      b[6] = b[7] = b[8] = b[9] = 0x7f;
      return b;
    },
    expect: ['UNSUPPORTED_FORMAT', 'CORRUPT_AUDIO'],
  },
];

if (!CAPPED) {
  describe('resource bombs (native front end) in a process limited to 1.5 GiB of address space', () => {
    it('every bomb fails fast with its code (the cases below, run in the capped child)', () => {
      const r = spawnSync('bash', ['-c', `ulimit -v ${ADDRESS_SPACE_CAP_KIB} && exec "$0" --test-reporter=tap "$1"`, process.execPath, __filename], {
        // Without NODE_TEST_CONTEXT (set by a parent test runner) the child reports in TAP on stdout.
        env: { ...process.env, NODE_TEST_CONTEXT: undefined, AURIS_BOMBS_CAPPED: '1', MALLOC_ARENA_MAX: '2' },
        encoding: 'utf8',
        timeout: 300_000,
      });
      assert.equal(r.status, 0, `the capped child failed (signal ${r.signal}):\n${r.stdout.slice(-6000)}\n${r.stderr.slice(-3000)}`);
      assert.match(r.stdout, new RegExp(`# pass ${bombs.length}\\b`), r.stdout.slice(-3000));
    });
  });
} else describe('resource bombs (native front end)', () => {
  for (const bomb of bombs) {
    it(`${bomb.name}: ${[bomb.expect].flat().join(' | ')}`, async () => {
      const bytes = bomb.bytes();
      const expect = [bomb.expect].flat();
      const file = `${dir.path}/bomb-${bombs.indexOf(bomb)}`;
      writeFileSync(file, bytes);
      for (const source of [{ buffer: bytes }, { path: file }] as AudioSource[]) {
        const got = await outcome(source, bomb.limit);
        assert.ok(expect.includes(got), `${JSON.stringify(source).slice(0, 40)}: got ${got}, expected ${expect.join('|')}`);
      }
      // probe never decodes; decodeAll has its own 10-minute / 2^27-sample budget
      try {
        await probe({ buffer: bytes });
      } catch (e) {
        assert.ok(e instanceof AudioError, String(e));
      }
      try {
        await decodeAll({ buffer: bytes });
        if (bomb.decodeAll) assert.fail('decodeAll accepted ' + bomb.name);
      } catch (e) {
        assert.ok(e instanceof AudioError, String(e));
        if (bomb.decodeAll) assert.ok([bomb.decodeAll].flat().includes(e.code), `decodeAll: ${e.code}`);
      }
    });
  }
});

if (CAPPED) after(() => dir.cleanup());

if (!CAPPED) describe('resource bombs through the REST API (real pipeline)', () => {
  let server: AurisServer;
  before(async () => {
    server = await startServer(`${dir.path}/data`, { config: { concurrency: 1, limits: { maxAudioDurationSec: 3600 } } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  for (const [i, expect] of [
    [2, 'DURATION_LIMIT_EXCEEDED'],
    [5, 'UNSUPPORTED_FORMAT'],
    [8, 'UNSUPPORTED_FORMAT'],
  ] as const) {
    it(`upload: ${bombs[i].name} -> job failed with ${expect}`, async () => {
      const res = await createJob(server, KEY_A, { audio: bombs[i].bytes(), contentType: i === 2 ? 'audio/flac' : 'audio/wav' });
      assert.equal(res.status, 201, await res.clone().text());
      const job = (await res.json()) as { job_id: string };
      const done = await waitForJob(server, KEY_A, job.job_id, undefined, 30_000);
      assert.equal(done.status, 'failed');
      assert.equal(done.error?.code, expect);
      assert.equal((await fetch(server.url + '/healthz')).status, 200);
    });
  }

  it(`upload: ${bombs[0]!.name} -> succeeded on the bytes that are there, with warning TRUNCATED_AUDIO`, async () => {
    const bytes = bombs[0]!.bytes();
    const res = await createJob(server, KEY_A, { audio: bytes, contentType: 'audio/wav' });
    const job = (await res.json()) as { job_id: string };
    const done = (await waitForJob(server, KEY_A, job.job_id, undefined, 30_000)) as Awaited<ReturnType<typeof waitForJob>> & { warnings: Array<{ code: string }> };
    assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
    assert.deepEqual(done.warnings.map((w) => w.code), ['TRUNCATED_AUDIO']);
    assert.ok(done.audio!.duration_sec < 10, `the real length, not 100 hours: ${done.audio!.duration_sec}`);
  });
});
