/**
 * Preloaded by `npm test` (node --require): no test may reach beyond this machine. Every TCP
 * connection to an address outside loopback and every DNS lookup of a name other than localhost
 * is refused (the socket errors with EACCES, the lookup with ENOTFOUND) and recorded. The guard
 * puts itself in NODE_OPTIONS, so the servers and clients the tests spawn are guarded too.
 *
 * A refusal is a test defect even where the code under test handles the error (a download that
 * fails as it should): the process that saw it exits non-zero, and every refusal is appended to
 * $AURIS_NET_GUARD_LOG, which the test runner process (the one started with --test) checks when
 * it exits, failing the run with the list.
 */
import dns = require('node:dns');
import { appendFileSync, existsSync, readFileSync, rmSync } from 'node:fs';
import net = require('node:net');
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LOOPBACK_NAMES = new Set(['localhost', 'localhost.', 'ip6-localhost']);

/** True for 127.0.0.0/8, ::1, ::ffff:127.x and localhost. */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (LOOPBACK_NAMES.has(h)) return true;
  if (net.isIPv4(h)) return h.startsWith('127.');
  if (net.isIPv6(h)) return h === '::1' || /^::ffff:127\./.test(h);
  return false;
}

const isRunner = process.execArgv.includes('--test') || process.argv.includes('--test');
if (!process.env['AURIS_NET_GUARD_LOG']) process.env['AURIS_NET_GUARD_LOG'] = join(tmpdir(), `auris-net-guard-${process.pid}.log`);
const LOG = process.env['AURIS_NET_GUARD_LOG'];
const refused: string[] = [];

function record(what: string): void {
  const line = `${what} (pid ${process.pid}: ${process.argv.slice(1).join(' ').slice(0, 200)})`;
  refused.push(line);
  process.stderr.write(`[loopback-only] refused ${line}\n`);
  try {
    appendFileSync(LOG, line + '\n');
  } catch {
    // the in-process list still fails this process
  }
}

function refusal(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code, errno: code === 'EACCES' ? -13 : -3008 });
}

/** The host a Socket.connect() call names; undefined for IPC paths and the port-only form (localhost). */
function connectHost(args: unknown[]): string | undefined {
  let a = args[0];
  if (Array.isArray(a)) a = a[0]; // internal normalized form
  if (a && typeof a === 'object') {
    const o = a as { host?: string; path?: string };
    if (o.path) return undefined;
    return o.host ?? 'localhost';
  }
  if (typeof a === 'string' && !/^\d+$/.test(a)) return undefined; // a pipe path
  return typeof args[1] === 'string' ? args[1] : 'localhost';
}

function guardSockets(): void {
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket;
  net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]): net.Socket {
    const host = connectHost(args);
    if (host !== undefined && !isLoopback(host)) {
      record(`a connection to ${host}`);
      process.nextTick(() => this.destroy(refusal('EACCES', `loopback-only: connection to ${host} refused in tests`)));
      return this;
    }
    return connect.apply(this, args);
  } as typeof net.Socket.prototype.connect;
}

function guardDns(): void {
  const lookup = dns.lookup as (...args: unknown[]) => void;
  (dns as { lookup: unknown }).lookup = function guardedLookup(host: string, ...rest: unknown[]): void {
    if (typeof host === 'string' && !isLoopback(host) && net.isIP(host) === 0) {
      record(`a DNS lookup of ${host}`);
      const cb = rest.at(-1) as (err: Error) => void;
      process.nextTick(() => cb(refusal('ENOTFOUND', `loopback-only: DNS lookup of ${host} refused in tests`)));
      return;
    }
    lookup(host, ...rest);
  };
  const promiseLookup = dns.promises.lookup as (...args: unknown[]) => Promise<unknown>;
  (dns.promises as { lookup: unknown }).lookup = async function guardedLookup(host: string, ...rest: unknown[]): Promise<unknown> {
    if (typeof host === 'string' && !isLoopback(host) && net.isIP(host) === 0) {
      record(`a DNS lookup of ${host}`);
      throw refusal('ENOTFOUND', `loopback-only: DNS lookup of ${host} refused in tests`);
    }
    return promiseLookup(host, ...rest);
  };
}

/** Children inherit the guard (and the shared log) through NODE_OPTIONS. */
function inherit(): void {
  const opt = `--require "${__filename}"`;
  const cur = process.env['NODE_OPTIONS'] ?? '';
  if (!cur.includes(__filename)) process.env['NODE_OPTIONS'] = `${cur} ${opt}`.trim();
}

function failOnExit(): void {
  process.on('exit', () => {
    if (isRunner) {
      const lines = existsSync(LOG) ? readFileSync(LOG, 'utf8').trim() : '';
      rmSync(LOG, { force: true });
      if (lines) {
        process.stderr.write(`\n[loopback-only] tests tried to reach beyond 127.0.0.1:\n${lines}\n`);
        process.exitCode = 1;
      }
    } else if (refused.length > 0 && !process.exitCode) {
      process.exitCode = 1;
    }
  });
}

guardSockets();
guardDns();
inherit();
failOnExit();
