/**
 * An engine that has loaded its models has given back what loading them freed (malloc_trim): the
 * registry's checks and the workers' onnxruntime sessions free ~55 MiB that glibc would otherwise keep,
 * and an idle server sat at ~285 MiB instead of ~230 (docs/deploy.md, Memory). Measured in a fresh
 * process: a second trim right after `InferenceEngine.create` must find little left to give back.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const DIST_SRC = path.join(__dirname, '..', '..', 'src');

const SCRIPT = `
const rss = () => Number(require('fs').readFileSync('/proc/self/status', 'utf8').match(/VmRSS:\\s+(\\d+)/)[1]) / 1024;
(async () => {
  const { InferenceEngine } = require(${JSON.stringify(path.join(DIST_SRC, 'inference'))});
  const { trimNativeMemory } = require(${JSON.stringify(path.join(DIST_SRC, 'audio'))});
  const engine = await InferenceEngine.create({ preload: 'all' });
  const before = rss();
  const released = await trimNativeMemory();
  process.stdout.write(JSON.stringify({ before, after: rss(), released }));
  await engine.close();
})();`;

describe('inference engine memory', { skip: process.platform !== 'linux' && 'reads /proc/self/status' }, () => {
  it('gives back what loading the models freed, once they are loaded', () => {
    const out = JSON.parse(execFileSync(process.execPath, ['-e', SCRIPT], { encoding: 'utf8', timeout: 120_000 })) as { before: number; after: number };
    // without the engine's own trim this second one released 57 MiB here; with it, 0
    assert.ok(out.before - out.after < 15, `a trim after the engine started still released ${(out.before - out.after).toFixed(1)} MiB (RSS ${out.before.toFixed(1)} MiB)`);
  });
});
