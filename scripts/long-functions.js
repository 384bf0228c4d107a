#!/usr/bin/env node
/**
 * Lists the functions longer than a limit (default 80 lines, from the first line of the
 * function to its closing brace, comments inside included) in the TypeScript under the given
 * folders; exits 1 when there is one. `npm run lint:functions` runs it on src/ and web/src;
 * test/code/function-length.test.ts asserts the same in `npm test`.
 *
 *   node scripts/long-functions.js [--max 80] src web/src
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

function tsFiles(dir, out = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) tsFiles(p, out);
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

/** A function's name: its own, its variable's or property's, else `<anonymous>` inside the named function around it. */
function nameOf(node, outer) {
  const own = node.name ?? (node.parent && (ts.isVariableDeclaration(node.parent) || ts.isPropertyAssignment(node.parent)) ? node.parent.name : undefined);
  if (own) return own.getText();
  return outer ? `${outer}/<anonymous>` : '<anonymous>';
}

/** Functions of one source text longer than `max` lines: [{ file, line, name, lines }]. */
function longFunctionsIn(file, text, max) {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node, outer) => {
    let inner = outer;
    if (ts.isFunctionLike(node) && node.body) {
      const first = src.getLineAndCharacterOfPosition(node.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(node.end).line;
      const name = nameOf(node, outer);
      if (last - first + 1 > max) found.push({ file, line: first + 1, name, lines: last - first + 1 });
      inner = name;
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(src, undefined);
  return found;
}

/** Functions longer than `max` lines in the .ts files under `dirs` (paths as given, relative to `root`). */
function longFunctions(dirs, { max = 80, root = process.cwd() } = {}) {
  return dirs
    .flatMap((d) => tsFiles(path.resolve(root, d)))
    .flatMap((f) => longFunctionsIn(path.relative(root, f).split(path.sep).join('/'), fs.readFileSync(f, 'utf8'), max))
    .sort((a, b) => b.lines - a.lines);
}

module.exports = { longFunctions, longFunctionsIn };

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--max');
  const max = at >= 0 ? Number(args.splice(at, 2)[1]) : 80;
  const found = longFunctions(args.length ? args : ['src', 'web/src'], { max });
  for (const f of found) console.log(`${f.lines}\t${f.file}:${f.line}\t${f.name}`);
  process.exitCode = found.length ? 1 : 0;
}
