/**
 * Child processes of the multi-process tests: auris nodes (test/nats/node.ts with the
 * fake analyzer, or the real `auris serve`), each started with its role and waited for
 * until it listens. Everything still running is killed when the test process exits.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './server';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

const DIST = join(__dirname, '..', '..');

export interface NodeProc {
  role: string;
  proc: ChildProcess;
  pid: number;
  url: string;
  /** The node's stderr (last 20 kB: its pre-start log, warnings and errors), then its stdout (the server log). */
  output(): string;
  /** SIGTERM and wait for the exit (clean shutdown). */
  stop(): Promise<void>;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

export async function startNode(opts: {
  role: 'api' | 'worker' | 'all';
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** The real CLI (dist/src/cli/main.js serve) instead of the fake-analyzer node. */
  real?: boolean;
  startTimeoutMs?: number;
}): Promise<NodeProc> {
  const script = opts.real ? [join(DIST, 'src', 'cli', 'main.js'), 'serve'] : [join(DIST, 'test', 'nats', 'node.js')];
  // The real CLI gets a port picked here (it is then polled on /healthz); the test node reports its own.
  const port = opts.real ? await freePort() : 0;
  const proc = spawn(process.execPath, [...script, '--role', opts.role, '--host', '127.0.0.1', '--port', String(port), ...opts.args], {
    env: { ...process.env, AURIS_NATS_TEST_NODE: '1', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(proc);
  let err = '';
  let out = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
  });
  const exited = new Promise<void>((r) =>
    proc.once('exit', () => {
      live.delete(proc);
      r();
    }),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${opts.role} node did not start:\n${err}\n${out}`)), opts.startTimeoutMs ?? 60_000);
    let resolved = false;
    const ready = (url: string): void => {
      if (resolved) return;
      resolved = true;
      clearTimeout(timer);
      resolve(url);
    };
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /READY (\S+)/.exec(out); // the test node
      if (m) ready(m[1]!);
      if (out.length > 100_000) out = out.slice(-50_000);
    });
    if (port) {
      const url = `http://127.0.0.1:${port}`;
      void (async () => {
        while (!resolved && proc.exitCode === null) {
          const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
          if (ok) return ready(url);
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
    }
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${opts.role} node exited (${code}) before it listened:\n${err}\n${out}`));
    });
  });
  const signalAndWait = async (signal: NodeJS.Signals): Promise<void> => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill(signal);
    const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(t);
  };
  return {
    role: opts.role,
    proc,
    pid: proc.pid!,
    url,
    output: () => `${err}\n${out}`, // the pre-start log (stderr) and the server log (stdout)
    stop: () => signalAndWait('SIGTERM'),
    kill: () => signalAndWait('SIGKILL'),
  };
}
