/**
 * Runs one measurement in a child process so that its peak RSS is its own:
 *  - node tasks: `node dist/bench/child.js <task> <json args>`; the child prints
 *    `BENCH_RESULT <json>` with its timings and process.resourceUsage();
 *  - external commands (ffmpeg): under /usr/bin/time, which reports wall, CPU and max RSS.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface ProcessStats {
  /** Wall time of the whole child process, seconds. */
  wallSec: number;
  /** User + system CPU time of the whole child process, seconds. */
  cpuSec: number;
  /** Peak resident set size, MiB. */
  maxRssMiB: number;
}

export interface ChildResult extends ProcessStats {
  /** Task-specific numbers reported by the child. */
  data: Record<string, unknown>;
}

const MARK = 'BENCH_RESULT ';

function spawnCollect(cmd: string, args: string[], env: NodeJS.ProcessEnv, timeoutSec: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSec * 1000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a node bench task (bench/child.ts) in a fresh process. */
export async function runNodeTask(task: string, args: unknown, opts: { env?: NodeJS.ProcessEnv; timeoutSec?: number } = {}): Promise<ChildResult> {
  const script = path.join(__dirname, 'child.js');
  const t0 = process.hrtime.bigint();
  const { code, stdout, stderr } = await spawnCollect(process.execPath, [script, task, JSON.stringify(args)], { ...process.env, ...(opts.env ?? {}) }, opts.timeoutSec ?? 1800);
  const wallSec = Number(process.hrtime.bigint() - t0) / 1e9;
  const line = stdout.split('\n').find((l) => l.startsWith(MARK));
  if (code !== 0 || !line) {
    throw new Error(`bench task ${task} failed (exit ${code}):\n${stderr.slice(-4000)}${stdout.slice(-2000)}`);
  }
  const r = JSON.parse(line.slice(MARK.length)) as { data: Record<string, unknown>; usage: NodeJS.ResourceUsage };
  return {
    wallSec,
    cpuSec: (r.usage.userCPUTime + r.usage.systemCPUTime) / 1e6,
    maxRssMiB: r.usage.maxRSS / 1024,
    data: r.data,
  };
}

/** Called by the child at the end: prints the result line for runNodeTask. */
export function reportFromChild(data: Record<string, unknown>): void {
  process.stdout.write(`\n${MARK}${JSON.stringify({ data, usage: process.resourceUsage() })}\n`);
}

/** Runs an external command under /usr/bin/time -f and reads wall, CPU and max RSS. */
export async function runTimed(cmd: string, args: string[], timeoutSec = 1800): Promise<ProcessStats> {
  const statsFile = path.join(os.tmpdir(), `auris-bench-time-${process.pid}-${Date.now()}.txt`);
  try {
    const t0 = process.hrtime.bigint();
    const { code, stderr } = await spawnCollect('/usr/bin/time', ['-f', '%e %U %S %M', '-o', statsFile, cmd, ...args], process.env, timeoutSec);
    if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${code}): ${stderr.slice(-2000)}`);
    const wallSec = Number(process.hrtime.bigint() - t0) / 1e9; // finer than time's %e (10 ms)
    const [, u, s, m] = fs.readFileSync(statsFile, 'utf8').trim().split(/\s+/).slice(-4).map(Number);
    return { wallSec, cpuSec: u + s, maxRssMiB: m / 1024 };
  } finally {
    fs.rmSync(statsFile, { force: true });
  }
}

/** A precise in-process stopwatch for a section: wall and process CPU seconds. */
export class Section {
  wallSec = 0;
  cpuSec = 0;
  private t0 = 0n;
  private c0: NodeJS.CpuUsage | null = null;

  start(): void {
    this.t0 = process.hrtime.bigint();
    this.c0 = process.cpuUsage();
  }

  stop(): void {
    if (!this.c0) throw new Error('Section.stop() without start()');
    this.wallSec += Number(process.hrtime.bigint() - this.t0) / 1e9;
    const c = process.cpuUsage(this.c0);
    this.cpuSec += (c.user + c.system) / 1e6;
    this.c0 = null;
  }

  async time<T>(f: () => Promise<T>): Promise<T> {
    this.start();
    try {
      return await f();
    } finally {
      this.stop();
    }
  }
}
