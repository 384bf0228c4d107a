// Copies a few inputs of the grown fuzz corpus into test/fixtures/regressions/: per format
// folder and outcome (OK or an AudioError code), the smallest, the median and the largest
// input, plus every file of
// build/fuzz/artifacts/ (crashes that were fixed). The file name carries the expected outcome:
//   <format>-<OUTCOME>-<sha1 prefix>.bin   (checked by test/hardening/regressions.test.ts)
// Usage (after npm run build): node native/fuzz/pick-regressions.js
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const root = path.resolve(__dirname, '..', '..');
const { decodeOutcome } = require(path.join(root, 'dist/test/audio/helpers'));
const out = path.join(root, 'test/fixtures/regressions');
fs.mkdirSync(out, { recursive: true });

// the same check the regression test makes (test/audio/helpers.ts)
const outcome = (buffer) => decodeOutcome({ buffer }, { maxDurationSec: 20, chunkSeconds: 2 });

(async () => {
  const work = path.join(root, 'build/fuzz/work');
  let n = 0;
  for (const format of fs.readdirSync(work)) {
    const byCode = new Map();
    for (const f of fs.readdirSync(path.join(work, format)).sort()) {
      const buf = fs.readFileSync(path.join(work, format, f));
      const code = await outcome(buf);
      if (!byCode.has(code)) byCode.set(code, []);
      byCode.get(code).push(buf);
    }
    for (const [code, bufs] of byCode) {
      bufs.sort((a, b) => a.length - b.length);
      const pick = new Set([bufs[0], bufs[Math.floor(bufs.length / 2)], bufs[bufs.length - 1]]);
      for (const buf of pick) {
        const h = crypto.createHash('sha1').update(buf).digest('hex').slice(0, 8);
        fs.writeFileSync(path.join(out, `${format}-${code}-${h}.bin`), buf);
        n++;
      }
    }
  }
  const art = path.join(root, 'build/fuzz/artifacts');
  for (const f of fs.existsSync(art) ? fs.readdirSync(art) : []) {
    const buf = fs.readFileSync(path.join(art, f));
    const code = await outcome(buf);
    const h = crypto.createHash('sha1').update(buf).digest('hex').slice(0, 8);
    fs.writeFileSync(path.join(out, `artifact-${code}-${h}.bin`), buf);
    n++;
  }
  console.log(`${n} files in ${out}`);
})();
