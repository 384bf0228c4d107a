/**
 * The error catalogue (src/errors.ts): every row renders on each transport; the native addon's
 * codes map into it; every code src/ raises is a row; docs/errors.md lists exactly its table and
 * docs/streaming.md's close-code and gRPC tables agree with it.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { AudioError } from '../../src/audio/errors';
import { AurisError, codesWhere, ERRORS, type ErrorCode, type ErrorSpec, isServerFault, NATIVE_CODES, STORAGE_ERRNOS, wsCloseCode } from '../../src/errors';
import { statusFor } from '../../src/grpc/server';
import { ApiError, type ApiErrorCode } from '../../src/http/errors';
import { isJobVerdict, isTransientStorageError, toJobError } from '../../src/jobs/errors';

const ROOT = resolve(__dirname, '..', '..', '..');
const CODES = Object.keys(ERRORS) as ErrorCode[];
const spec = (code: ErrorCode): ErrorSpec => ERRORS[code];

/**
 * Codes that belong to one module's own contract and never reach a transport, so they are not
 * rows: the job store's errors (caught and mapped by src/jobs and src/http), the client library's,
 * and `auris eval`'s (docs/errors.md, Codes outside the catalogue).
 */
const MODULE_LOCAL_CODES = new Set(['REVISION_CONFLICT', 'ALREADY_EXISTS', 'BLOB_TOO_LARGE', 'BACKEND_UNAVAILABLE', 'CLIENT_TIMEOUT', 'EVAL_CSV_INVALID']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The code strings src/ raises: error constructors, the stream and gRPC error helpers, stream error objects. */
function raisedCodes(): Map<string, string> {
  const patterns = [
    /new (?:AurisError|AudioError|ApiError)\(\s*'([A-Z][A-Z0-9_]+)'/g,
    /\b(?:wsError|statusError)\(\s*'([A-Z][A-Z0-9_]+)'/g,
    /\.fail\([^;]*?,\s*'([A-Z][A-Z0-9_]+)'\)/g,
    /\{ code: '([A-Z][A-Z0-9_]+)', message/g,
    /readonly code = '([A-Z][A-Z0-9_]+)'/g,
  ];
  const found = new Map<string, string>();
  for (const file of sourceFiles(join(ROOT, 'src'))) {
    if (file.includes(`${join('src', 'callbacks', 'verify.ts')}`) || file.includes(join('src', 'download', 'verify.ts'))) continue; // libraries for receivers and file hosts, with their own code unions
    const text = readFileSync(file, 'utf8');
    for (const re of patterns) for (const m of text.matchAll(re)) found.set(m[1]!, file.slice(ROOT.length + 1));
  }
  return found;
}

/** The docs/errors.md line of a row. */
function docsLine(code: ErrorCode): string {
  const s = spec(code);
  const job = s.job === 'fails' ? 'fails' : s.job ? `fails as \`${s.job}\`` : '';
  const message = s.title ? `${s.message} (problem title: ${s.title})` : s.message;
  return `| \`${code}\` | ${s.http ?? ''} | ${s.grpc ?? ''} | ${s.ws ?? ''} | ${job} | ${message} |`;
}

describe('error catalogue', () => {
  it('every row has a message and renders somewhere: a REST status, a gRPC status, a close code or a job failure', () => {
    for (const code of CODES) {
      const s = spec(code);
      assert.ok(s.message.length > 0, code);
      assert.ok(s.http !== undefined || s.grpc !== undefined || s.ws !== undefined || s.job !== undefined, `${code} renders nowhere`);
      if (s.http !== undefined) assert.ok(s.http >= 400 && s.http <= 599, `${code}: HTTP ${s.http}`);
      if (s.grpc !== undefined) assert.equal(typeof grpc.status[s.grpc], 'number', `${code}: gRPC ${s.grpc}`);
      if (s.ws !== undefined) assert.ok(s.ws >= 4000 && s.ws <= 4999, `${code}: close ${s.ws} outside the application range`);
      if (s.job !== undefined && s.job !== 'fails') assert.equal(spec(s.job).job, 'fails', `${code} fails a job as ${s.job}, which is not a job failure code`);
    }
  });

  it('the native addon raises exactly NATIVE_CODES (codeName of native/errors.h), each a catalogue row', () => {
    const header = readFileSync(join(ROOT, 'native', 'errors.h'), 'utf8');
    const names = [...header.matchAll(/case ErrorCode::\w+: return "([A-Z_]+)";/g)].map((m) => m[1]);
    const enumerators = header.slice(header.indexOf('enum class ErrorCode'), header.indexOf('};')).match(/^\s+[A-Z]\w+,/gm) ?? [];
    assert.equal(names.length, enumerators.length, 'every enumerator has a codeName');
    assert.deepEqual([...names].sort(), [...NATIVE_CODES].sort());
    for (const code of NATIVE_CODES) {
      assert.ok(spec(code).job !== undefined, `${code}: a native error ends a job at once`);
      assert.equal(new AudioError(code, 'x').code, code);
    }
  });

  it('every code raised in src/ is a catalogue row (or a module-local code listed here)', () => {
    const raised = raisedCodes();
    assert.ok(raised.size >= 30, `the scan finds the codes (${raised.size})`);
    for (const [code, file] of raised) {
      assert.ok(code in ERRORS || MODULE_LOCAL_CODES.has(code), `${code} (${file}) is not in src/errors.ts`);
    }
  });

  it('REST: an ApiError answers with the status and title of its row', () => {
    for (const code of codesWhere((s) => s.http !== undefined) as ApiErrorCode[]) {
      const p = new ApiError(code, 'detail').toProblem('/x');
      assert.equal(p.status, spec(code).http);
      assert.equal(p.title, spec(code).title ?? spec(code).message);
      assert.equal(p.code, code);
      assert.equal(p.type, `urn:auris:problem:${code.toLowerCase().replace(/_/g, '-')}`);
    }
    assert.equal(new ApiError('UNKNOWN_MODEL', 'd').toProblem().title, 'Unknown model');
  });

  it('gRPC and WebSocket: the row status and close code; INTERNAL / 4500 for a code without one', () => {
    for (const code of CODES) {
      assert.equal(statusFor(code), grpc.status[spec(code).grpc ?? 'INTERNAL'], code);
      assert.equal(wsCloseCode(code), spec(code).ws ?? 4500, code);
    }
    assert.equal(statusFor('NO_SUCH_CODE'), grpc.status.INTERNAL);
    assert.equal(statusFor(undefined), grpc.status.INTERNAL);
    assert.equal(wsCloseCode('NO_SUCH_CODE'), 4500);
    assert.equal(statusFor('DURATION_LIMIT_EXCEEDED'), grpc.status.RESOURCE_EXHAUSTED);
    assert.equal(statusFor('ABORTED'), grpc.status.CANCELLED);
    assert.equal(wsCloseCode('TOO_MANY_AUTH_FAILURES'), 4429);
    // the server's fault: logged, message not passed on
    assert.equal(isServerFault('INFERENCE_FAILED'), true);
    assert.equal(isServerFault('NO_SUCH_CODE'), true);
    assert.equal(isServerFault('INVALID_MESSAGE'), false);
    assert.equal(isServerFault('CORRUPT_AUDIO'), false);
  });

  it('jobs: a job failure code fails with its message, IO_ERROR as PROCESSING_FAILED, anything else is retried', () => {
    assert.deepEqual(toJobError(new AurisError('DOWNLOAD_TOO_LARGE', 'too big')), { code: 'DOWNLOAD_TOO_LARGE', message: 'too big' });
    assert.deepEqual(toJobError(new AudioError('CORRUPT_AUDIO', '')), { code: 'CORRUPT_AUDIO', message: ERRORS.CORRUPT_AUDIO.message });
    assert.deepEqual(toJobError(new AudioError('IO_ERROR', 'cannot open x.wav')), { code: 'PROCESSING_FAILED', message: 'I/O error: cannot open x.wav' });
    assert.deepEqual(toJobError(new TypeError('boom')), { code: 'PROCESSING_FAILED', message: ERRORS.PROCESSING_FAILED.message });
    for (const code of CODES) assert.equal(isJobVerdict(new AurisError(code, 'm')), spec(code).job !== undefined, code);
    assert.equal(isJobVerdict(Object.assign(new Error('x'), { code: 'toString' })), false);
    assert.equal(isJobVerdict(new TypeError('x')), false);
  });

  it('storage errnos: one list; those that pass give a job back, the others do not', () => {
    const fault = (code: string): Error => Object.assign(new Error(code), { code, syscall: 'write' });
    for (const [errno, { passes }] of Object.entries(STORAGE_ERRNOS)) {
      assert.equal(isTransientStorageError(fault(errno)), passes, errno);
      assert.equal(isTransientStorageError(new Error('wrapped', { cause: fault(errno) })), passes, `${errno} as a cause`);
    }
    assert.equal(isTransientStorageError(fault('ENOENT')), false);
    for (const e of ['ENOSPC', 'EDQUOT', 'EIO', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY']) assert.equal(STORAGE_ERRNOS[e]?.passes, true, e);
    for (const e of ['EROFS', 'EACCES', 'EPERM', 'ENOTDIR']) assert.equal(STORAGE_ERRNOS[e]?.passes, false, e);
  });

  it('docs/errors.md lists the catalogue, row for row', () => {
    const md = readFileSync(join(ROOT, 'docs', 'errors.md'), 'utf8');
    const lines = md.split('\n').filter((l) => /^\| `[A-Z][A-Z0-9_]+` \|/.test(l));
    const want = CODES.map(docsLine);
    assert.deepEqual(lines, want, `docs/errors.md's table should read:\n${want.join('\n')}`);
    assert.match(md, /src\/errors\.ts/);
  });

  it("docs/streaming.md's close-code and gRPC status tables agree with the catalogue", () => {
    const md = readFileSync(join(ROOT, 'docs', 'streaming.md'), 'utf8');
    const codesIn = (cell: string): string[] => [...cell.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!);
    let checked = 0;
    let table = '';
    for (const line of md.split('\n')) {
      if (!line.startsWith('|')) table = '';
      else if (table === '') table = line; // the header row of the table this line is in
      if (!/^\| (Close code \| Error codes|Status \| auris code) \|/.test(table)) continue;
      const cells = line.split('|').map((c) => c.trim());
      const close = /^(4\d{3})$/.exec(cells[1] ?? '');
      const status = /^`([A-Z_]+)`$/.exec(cells[1] ?? '');
      for (const code of codesIn(cells[2] ?? '')) {
        assert.ok(code in ERRORS, `${code} (docs/streaming.md) is not in the catalogue`);
        if (close) assert.equal(wsCloseCode(code), Number(close[1]), `${code}: close code in docs/streaming.md`);
        else if (status) assert.equal(statusFor(code), grpc.status[status[1] as keyof typeof grpc.status], `${code}: gRPC status in docs/streaming.md`);
        else continue;
        checked++;
      }
    }
    assert.ok(checked >= 20, `the tables were found (${checked} codes)`);
  });
});
