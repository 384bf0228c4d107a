/**
 * The JS API around the addon: probe, FileFrontend life cycle (read order, end, close,
 * concurrent calls), Buffer sources surviving garbage collection, parallel analyzers.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { AudioError, FeatureChunk, FileFrontend, nativeVersions, probe } from '../../src/audio';
import { concatChannel, firstDifference, testSignal, tmpFile, wavBytes } from './helpers';

const RATE = 48000;
const file = tmpFile('api.wav');
fs.writeFileSync(file, wavBytes({ rate: RATE, channels: 3, bits: 24 }, testSignal(Math.round(RATE * 6.5), 3, RATE, 8)));

async function readAll(fa: FileFrontend): Promise<FeatureChunk[]> {
  const out: FeatureChunk[] = [];
  for await (const chunks of fa) out.push(...chunks);
  return out;
}

describe('probe()', () => {
  it('reports the header facts, from a path and from a Buffer', async () => {
    const expected = { sampleRate: RATE, channels: 3, frames: Math.round(RATE * 6.5), durationSec: 6.5, format: 'WAV', subtype: 'PCM_24', truncated: false };
    assert.deepEqual(await probe({ path: file }), expected);
    assert.deepEqual(await probe({ buffer: fs.readFileSync(file) }), expected);
    assert.deepEqual(await probe({ buffer: new Uint8Array(fs.readFileSync(file)) as Buffer }), expected);
  });

  it('rejects with AudioError (never a plain Error) and a stable code', async () => {
    await assert.rejects(probe({ buffer: Buffer.from('nope') }), (e: unknown) => e instanceof AudioError && e.code === 'UNSUPPORTED_FORMAT' && e.name === 'AudioError');
  });
});

describe('FileFrontend', () => {
  it('info, channels, consecutive chunks, null at the end (and after)', async () => {
    const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 2 });
    assert.equal(fa.info.channels, 3);
    assert.deepEqual(fa.channels, [0, 1, 2]);
    const seen: number[] = [];
    for (;;) {
      const chunks = await fa.read();
      if (!chunks) break;
      assert.deepEqual(chunks.map((c) => c.channel), [0, 1, 2]);
      const { startStep, steps } = chunks[0]!;
      for (const c of chunks) {
        assert.equal(c.startStep, startStep);
        assert.equal(c.steps, steps);
        assert.equal(c.levels.length, steps);
        assert.equal(c.features.length, steps * 256);
        assert.ok(c.levels instanceof Float32Array && c.features instanceof Float32Array);
      }
      seen.push(startStep, steps);
    }
    assert.equal(await fa.read(), null, 'null again after the end');
    const total = seen.reduce((n, v, i) => (i % 2 ? n + v : n), 0);
    assert.equal(total, Math.ceil((6.5 * 16000) / 1024));
    const stats = fa.stats;
    assert.equal(stats.framesDecoded, Math.round(RATE * 6.5));
    for (const k of ['decodeSec', 'resampleSec', 'featuresSec'] as const) assert.ok(stats[k] >= 0);
    fa.close();
    fa.close(); // idempotent
    await assert.rejects(fa.read(), (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT' && /closed/.test(e.message));
  });

  it('read() calls made without awaiting are served in order', async () => {
    const reference = await readAll(await FileFrontend.open({ path: file }, { chunkSeconds: 1 }));
    const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 1 });
    const pending = Array.from({ length: 12 }, () => fa.read());
    const results = await Promise.all(pending);
    fa.close();
    const chunks = results.filter((r): r is FeatureChunk[] => r !== null).flat();
    assert.ok(results.slice(results.findIndex((r) => r === null)).every((r) => r === null), 'nulls only at the end');
    for (const c of [0, 1, 2]) {
      assert.equal(firstDifference(concatChannel(chunks, c).features, concatChannel(reference, c).features), -1);
    }
  });

  it('close() during a read lets that read finish, later reads fail', async () => {
    const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 3 });
    const p = fa.read();
    fa.close();
    const first = await p.catch((e: unknown) => e);
    assert.ok(first === null || Array.isArray(first) || (first instanceof AudioError && first.code === 'INVALID_ARGUMENT'));
    await assert.rejects(fa.read(), (e: unknown) => e instanceof AudioError && e.code === 'INVALID_ARGUMENT');
  });

  it('an early exit from for-await closes the analyzer', async () => {
    const fa = await FileFrontend.open({ path: file }, { chunkSeconds: 1 });
    for await (const chunks of fa) {
      assert.ok(chunks.length === 3);
      break;
    }
    await assert.rejects(fa.read(), (e: unknown) => e instanceof AudioError && /closed/.test(e.message));
  });

  it('several analyzers in parallel give the same features as one at a time', async () => {
    const sequential = await readAll(await FileFrontend.open({ path: file }));
    const parallel = await Promise.all(
      [0, 1, 2, 3].map(async (i) => readAll(await FileFrontend.open(i % 2 ? { path: file } : { buffer: fs.readFileSync(file) }, { chunkSeconds: 0.5 + i }))),
    );
    for (const run of parallel) {
      for (const c of [0, 1, 2]) assert.equal(firstDifference(concatChannel(run, c).features, concatChannel(sequential, c).features), -1);
    }
  });

  it('a Buffer source stays valid while the caller drops it and the GC runs', () => {
    const script = `
      const a = require(${JSON.stringify(path.resolve(__dirname, '../../src/audio'))});
      const fs = require('fs');
      (async () => {
        const ref = [];
        for await (const c of await a.FileFrontend.open({ path: process.argv[1] })) ref.push(c[0].features.slice());
        let fa = await a.FileFrontend.open({ buffer: fs.readFileSync(process.argv[1]) }, { chunkSeconds: 0.5 });
        const got = [];
        for (;;) {
          global.gc(); await new Promise((r) => setImmediate(r)); global.gc();
          const c = await fa.read();
          if (!c) break;
          got.push(c[0].features.slice());
        }
        fa.close();
        const flat = (l) => Buffer.concat(l.map((x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength)));
        console.log(flat(ref).equals(flat(got)) ? 'same' : 'different');
      })();`;
    const res = spawnSync(process.execPath, ['--expose-gc', '-e', script, file], { encoding: 'utf8', timeout: 60000 });
    assert.equal(res.status, 0, res.stderr);
    assert.equal(res.stdout.trim(), 'same');
  });

  it('nativeVersions() names the libraries', () => {
    const v = nativeVersions();
    assert.match(v.sndfile!, /libsndfile/);
    assert.match(v.soxr!, /soxr/);
    assert.match(v.mpg123!, /mpg123/);
    assert.match(v.opus!, /libopus/);
  });
});
