// Builds the web console into web/dist: TypeScript (web/tsconfig.json, ES2022 modules for the
// browser, no bundler) plus the static files (index.html, style.css). Served by src/http/console.ts.
// Usage: node web/build.mjs   (from anywhere; also run by scripts/setup.sh)
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
const STATIC = ['index.html', 'style.css'];

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(here, 'tsconfig.json')], { stdio: 'inherit' });
for (const f of STATIC) copyFileSync(join(here, f), join(out, f));
for (const f of ['main.js', ...STATIC]) if (!existsSync(join(out, f))) throw new Error(`web build: ${f} missing`);
process.stderr.write(`web console built: ${readdirSync(out).sort().join(' ')}\n`);
