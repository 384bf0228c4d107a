/**
 * The fuzz harness cannot rot (docs/reliability.md, section 1): native/fuzz/smoke.sh builds
 * the fuzz target with g++ + ASan + UBSan (replay driver, same entry point as the libFuzzer
 * build), replays the regression corpus and a few seconds of seeded mutants of every format's
 * seed corpus, with LeakSanitizer on. Fails if the harness does not build or finds anything.
 * Then the sanitizer canaries: a deliberate overflow and a deliberate leak must both be
 * reported, so a build without sanitizers, or a suppression that hides every leak, fails too.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(__dirname, '../../..');
const BIN = join(ROOT, 'build/fuzz/replay_frontend');
const SECONDS_PER_FORMAT = '3';
const FORMATS = ['wav', 'flac', 'mp3', 'opus', 'other'];

/** The replay binary with the sanitizer settings of smoke.sh (suppressions included). */
function replay(...args: string[]): { status: number | null; stderr: string } {
  return replayWith(`suppressions=${join(ROOT, 'native/fuzz/lsan.supp')}`, ...args);
}
function replayWith(lsanOptions: string, ...args: string[]): { status: number | null; stderr: string } {
  const env = { ...process.env, ASAN_OPTIONS: 'detect_leaks=1:handle_abort=1', LSAN_OPTIONS: lsanOptions };
  const r = spawnSync(BIN, args, { encoding: 'utf8', env, timeout: 60_000 });
  return { status: r.status, stderr: r.stderr };
}

describe('fuzz harness smoke run (ASan + UBSan + LSan)', () => {
  it('builds and runs the regression corpus and every format without a finding', () => {
    const r = spawnSync('bash', [join(ROOT, 'native/fuzz/smoke.sh'), SECONDS_PER_FORMAT], {
      encoding: 'utf8',
      timeout: 240_000,
    });
    assert.equal(r.status, 0, `smoke.sh failed:\n${r.stdout}\n${r.stderr}`);
    const line = (name: string): RegExpMatchArray => {
      const m = r.stdout.match(new RegExp(`^smoke ${name} files=(\\d+) mutants=(\\d+) rc=0$`, 'm'));
      assert.ok(m, `no clean summary for ${name}:\n${r.stdout}`);
      return m;
    };
    const fixtures = readdirSync(join(ROOT, 'test/fixtures/regressions')).length;
    assert.equal(Number(line('regressions')[1]), fixtures);
    for (const format of FORMATS) {
      const [, files, mutants] = line(format);
      assert.ok(Number(files) > 0, `${format}: empty seed corpus`);
      assert.ok(Number(mutants) > 0, `${format}: no mutants ran`);
    }
  });

  it('a heap overflow is reported by AddressSanitizer and its input kept', () => {
    const artifact = join(ROOT, 'build/fuzz/artifacts/selftest-overflow.bin');
    rmSync(artifact, { force: true });
    const r = replay('-selftest=overflow', `-artifact=${artifact}`);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /AddressSanitizer: heap-buffer-overflow/);
    assert.ok(existsSync(artifact));
    assert.equal(readFileSync(artifact).length, 16);
  });

  it('lsan.supp hides the upstream libvorbis leak (damaged OGG Vorbis header), and only it', () => {
    const input = join(ROOT, 'test/fixtures/regressions/artifact-CORRUPT_AUDIO-3438501a.bin');
    const artifact = `-artifact=${join(ROOT, 'build/fuzz/artifacts/selftest-vorbis.bin')}`;
    const bare = replayWith('', artifact, input);
    assert.notEqual(bare.status, 0);
    assert.match(bare.stderr, /LeakSanitizer: detected memory leaks[\s\S]*in vorbis_info_init/);
    const suppressed = replay(artifact, input);
    assert.equal(suppressed.status, 0, suppressed.stderr);
  });

  it('a leak of ours is reported although the libvorbis leak is suppressed', () => {
    const r = replay('-selftest=leak', `-artifact=${join(ROOT, 'build/fuzz/artifacts/selftest-leak.bin')}`);
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /LeakSanitizer: detected memory leaks/);
    assert.match(r.stderr, /16384 byte\(s\) leaked in 4 allocation\(s\)/);
  });
});
