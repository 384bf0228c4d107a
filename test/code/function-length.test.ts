/**
 * No function in src/ or web/src is longer than 80 lines (DEVELOPERS-GUIDE: functions under
 * ~80 lines; split a long one into named stages). The checker is scripts/long-functions.js
 * (`npm run lint:functions` prints the same list).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as path from 'node:path';

interface LongFunction {
  file: string;
  line: number;
  name: string;
  lines: number;
}
interface Checker {
  longFunctions(dirs: string[], opts: { max?: number; root?: string }): LongFunction[];
  longFunctionsIn(file: string, text: string, max: number): LongFunction[];
}

const ROOT = path.resolve(__dirname, '..', '..', '..');
const checker = require(path.join(ROOT, 'scripts', 'long-functions.js')) as Checker;
const MAX_LINES = 80;

const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');

describe('function length', () => {
  it('the checker measures from the first line to the closing brace and names what it finds', () => {
    const text = [
      `export function long(): void {\n${body(79)}\n}`, // 81 lines
      `export function fits(): void {\n${body(78)}\n}`, // 80 lines
      `class A {\n  method(): void {\n${body(80)}\n  }\n}`,
      `const arrow = (): void => {\n${body(79)}\n};`,
      `export function outer(): void {\n  setTimeout(() => {\n${body(80)}\n  });\n}`,
    ].join('\n');
    const found = checker.longFunctionsIn('x.ts', text, MAX_LINES).map((f) => `${f.name}:${f.lines}`);
    assert.deepEqual(found.sort(), ['arrow:81', 'long:81', 'method:82', 'outer/<anonymous>:82', 'outer:84'].sort());
  });

  it(`no function in src/ or web/src is longer than ${MAX_LINES} lines`, () => {
    const found = checker.longFunctions(['src', 'web/src'], { max: MAX_LINES, root: ROOT });
    assert.ok(checker.longFunctions(['src'], { max: 20, root: ROOT }).length > 0, 'the checker reads src/');
    const tooLong = found.map((f) => `${f.file}:${f.line} ${f.name} (${f.lines} lines)`);
    assert.deepEqual(tooLong, [], `split these into named stages of at most ${MAX_LINES} lines`);
  });
});
