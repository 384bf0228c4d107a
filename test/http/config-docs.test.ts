/**
 * The configuration documented where people look: every environment variable of
 * `auris serve --help` is in the README's configuration table, and every flag with its
 * variable is a row of docs/api.md's full table (the two drift apart otherwise).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';

const ROOT = resolve(__dirname, '..', '..', '..');

/** [flag, env] of every option row of `serve --help`. */
function helpOptions(): Array<[string, string]> {
  const help = execFileSync(process.execPath, [resolve(ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve', '--help'], { encoding: 'utf8' });
  return help
    .split('\n')
    .map((l) => /^\s+(--[a-z0-9-]+)\s+([A-Z0-9_]+)\s/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [m[1]!, m[2]!]);
}

/** The table rows (lines starting with `|`) of the section that starts at `heading`. */
function tableAfter(file: string, heading: string): string[] {
  const text = readFileSync(resolve(ROOT, file), 'utf8');
  const at = text.indexOf(heading);
  assert.ok(at >= 0, `${heading} in ${file}`);
  const lines = text.slice(at).split('\n').slice(1);
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[] = [];
  for (const l of lines.slice(start)) {
    if (!l.startsWith('|')) break;
    rows.push(l);
  }
  return rows;
}

describe('configuration docs', () => {
  const options = helpOptions();

  it('serve --help lists the options', () => {
    assert.ok(options.length >= 40, String(options.length));
  });

  it('every environment variable of serve --help is in the README configuration table', () => {
    const table = tableAfter('README.md', 'Configuration by flag or environment variable').join('\n');
    const missing = options.filter(([, env]) => !new RegExp(`\`${env}\``).test(table)).map(([, env]) => env);
    assert.deepEqual(missing, []);
  });

  it('every flag of serve --help is a row of the docs/api.md configuration table, with its variable', () => {
    const rows = tableAfter('docs/api.md', '## Configuration');
    const missing = options.filter(([flag, env]) => !rows.some((r) => r.startsWith(`| \`${flag}\` | \`${env}\` |`))).map(([f, e]) => `${f} ${e}`);
    assert.deepEqual(missing, []);
  });
});
