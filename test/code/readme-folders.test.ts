/**
 * The README's folder table matches the tree: every top-level folder, every entry of src/ and
 * every docs/*.md is named in it, and everything it names exists.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
/** Build outputs, caches and tool folders (ignored by git), not part of the architecture. */
const NOT_SOURCE = new Set(['node_modules', 'build', 'dist', 'data', 'tmp', '.git', '.venv', '.pytest_cache']);

/** The rows of the table under `| folder | what |`: [first column's `paths`, whole row]. */
function folderTable(readme: string): Array<{ paths: string[]; row: string }> {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => l.startsWith('| folder | what |'));
  assert.ok(start >= 0, 'README.md has a "| folder | what |" table');
  const rows: Array<{ paths: string[]; row: string }> = [];
  for (const row of lines.slice(start + 2)) {
    if (!row.startsWith('|')) break;
    const first = row.split('|')[1] ?? '';
    rows.push({ paths: [...first.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\/$/, '')), row });
  }
  return rows;
}

describe('README folder table', () => {
  const rows = folderTable(readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  const named = new Set(rows.flatMap((r) => r.paths));

  it('names every top-level folder and every entry of src/', () => {
    const top = readdirSync(ROOT, { withFileTypes: true })
      .filter((e) => e.isDirectory() && !NOT_SOURCE.has(e.name) && (!e.name.startsWith('.') || e.name === '.ci'))
      .map((e) => e.name);
    const src = readdirSync(path.join(ROOT, 'src')).filter((n) => !n.endsWith('.d.ts')).map((n) => `src/${n}`);
    assert.ok(top.includes('src') && src.length > 5, 'the tree was read');
    const missing = [...top.filter((d) => d !== 'src'), ...src].filter((p) => !named.has(p)); // src/ is named entry by entry
    assert.deepEqual(missing, [], 'add a row (or a name to a row) of the README folder table');
  });

  it('names only what exists', () => {
    const gone = [...named].filter((p) => !existsSync(path.join(ROOT, p)));
    assert.deepEqual(gone, []);
  });

  it('the docs row lists every docs/*.md', () => {
    const docsRow = rows.find((r) => r.paths.includes('docs'));
    assert.ok(docsRow, 'a docs/ row');
    const unlisted = readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md') && !docsRow.row.includes(`\`${f}\``));
    assert.deepEqual(unlisted, []);
  });
});
