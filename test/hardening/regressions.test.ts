/**
 * The fuzz regression corpus (test/fixtures/regressions/, picked by
 * native/fuzz/pick-regressions.js from the libFuzzer corpus and crash artifacts): every file
 * decodes to the outcome its name records (<format>-<OUTCOME>-<hash>.bin: OK or an AudioError
 * code), from a Buffer and from a path, in this process and never with anything but an
 * AudioError. A fixed crash is kept here as artifact-<CODE>-<hash>.bin.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { decodeOutcome } from '../audio/helpers';
import { describe, it } from 'node:test';
import { AudioError, decodeAll, type AudioSource } from '../../src/audio';

const DIR = resolve(__dirname, '../../../test/fixtures/regressions');

const outcome = (source: AudioSource): Promise<string> => decodeOutcome(source, { maxDurationSec: 20, chunkSeconds: 2 });

describe('fuzz regression corpus', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.bin'));

  it('is not empty', () => assert.ok(files.length > 0));

  for (const f of files) {
    const expect = f.split('-')[1]!;
    it(`${f}: ${expect}`, async () => {
      const file = join(DIR, f);
      const { readFileSync } = await import('node:fs');
      const buffer = readFileSync(file);
      assert.equal(await outcome({ buffer }), expect);
      assert.equal(await outcome({ path: file }), expect);
      try {
        await decodeAll({ buffer });
      } catch (e) {
        assert.ok(e instanceof AudioError, String(e));
      }
    });
  }

  it('the whole corpus in a child process: exits normally (no abort, no sanitizer-style crash)', () => {
    const script = `
      const { FileFrontend } = require(${JSON.stringify(resolve(__dirname, '../../src/audio'))});
      const fs = require('fs'), path = require('path');
      (async () => {
        for (const f of fs.readdirSync(${JSON.stringify(DIR)})) {
          let fa;
          try { fa = await FileFrontend.open({ path: path.join(${JSON.stringify(DIR)}, f) }, { maxDurationSec: 20 }); while ((await fa.read()) !== null); } catch (e) { if (!e.code) throw e; } finally { fa && fa.close(); }
        }
        console.log('done');
      })();`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /done/);
  });
});
