/**
 * `npm run bench:idle-streams` (node dist/bench/grpc/idle.js [--streams N] [--hold-ms M] [--audio-ms A]): the memory a
 * crowd of idle gRPC streams costs the streaming server, and whether it comes back once they close
 * (issue: 1,000 calls that sent their config but never audio took RSS from 178 to 507 MB, and it stayed).
 *
 * The server runs in its own process (bench/grpc/server.ts, per-key quota lifted). Measured from
 * /proc/<pid>/status: VmRSS before (after one real stream warmed the models up), while N streams
 * hold their config without audio, and after they were cancelled and the server settled. Numbers
 * only, never pass/fail.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as path from 'node:path';
import { createInterface } from 'node:readline';
import { createClient, openAnalyzeStream } from '../../src/grpc/client';
import { BENCH_KEY } from './server-process';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Mem {
  rss: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** The server's memory after a full GC (MiB), asked over its stdin. */
async function memory(child: ChildProcessWithoutNullStreams, lines: AsyncIterator<string>, command = 'mem'): Promise<{ mem: Mem; stats: { activeStreams?: number }; trimMs?: number }> {
  child.stdin.write(`${command}\n`);
  for (;;) {
    const { value, done } = await lines.next();
    if (done) throw new Error('server closed');
    if (value.includes('"mem"')) return JSON.parse(value) as { mem: Mem; stats: { activeStreams?: number }; trimMs?: number };
  }
}

async function startServer(): Promise<{ child: ChildProcessWithoutNullStreams; port: number; lines: AsyncIterator<string> }> {
  const child = spawn(process.execPath, ['--expose-gc', path.join(__dirname, 'server.js')], { stdio: ['pipe', 'pipe', 'inherit'] }) as unknown as ChildProcessWithoutNullStreams;
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error('server exited before listening');
  const { port } = JSON.parse(first.value) as { port: number };
  return { child, port, lines };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const arg = (name: string, def: number): number => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) : def);
  const n = arg('--streams', 1000);
  const holdMs = arg('--hold-ms', 5000);
  // --audio-ms M: every stream first sends M ms of noise (its front end and model state exist), then idles
  const audioMs = arg('--audio-ms', 0);
  const trimWaitMs = arg('--trim-wait-ms', 11_000);
  const { child, port, lines } = await startServer();
  const config = { models: ['speech', 'gender', 'arousal'], output_period: 1024, sample_rate: 16000, encoding: 'PCM_S16LE' as const };
  try {
    // warm-up: one real stream (loads the models and the stream graphs)
    const warmClient = createClient(`127.0.0.1:${port}`);
    const warm = openAnalyzeStream(warmClient, BENCH_KEY, config);
    await warm.send(new Uint8Array(16000 * 2 * 4));
    warm.end();
    warm.call.on('data', () => undefined);
    await warm.status;
    warmClient.close();
    await sleep(1000);
    const before = await memory(child, lines);

    // N idle streams, spread over a few channels (one HTTP/2 connection holds at most ~100 streams by default)
    const clients = Array.from({ length: Math.ceil(n / 90) }, () => createClient(`127.0.0.1:${port}`));
    const handles = Array.from({ length: n }, (_, i) => openAnalyzeStream(clients[i % clients.length]!, BENCH_KEY, config));
    await Promise.race([Promise.all(handles.map((h) => h.metadata)), sleep(holdMs)]);
    if (audioMs > 0) {
      const noise = new Uint8Array(Math.round(audioMs * 16) * 2);
      for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24;
      for (const h of handles) h.call.on('data', () => undefined);
      await Promise.all(handles.map((h) => h.send(noise)));
    }
    await sleep(holdMs);
    const idle = await memory(child, lines);

    for (const h of handles) h.call.cancel();
    await Promise.all(handles.map((h) => h.status));
    for (const c of clients) c.close();
    await sleep(holdMs);
    // A full GC frees the closed streams' buffers; the server's own trims (src/streaming/memory-trim.ts,
    // every 10 s after a burst of closes) then give the memory back: sampled after the next one.
    await memory(child, lines);
    await sleep(trimWaitMs);
    const after = await memory(child, lines);
    // the same after one more glibc malloc_trim(0): how much of what stays is free memory the allocator keeps
    const trimmed = await memory(child, lines, 'memtrim');

    console.log(JSON.stringify({ streams: n, audioMs, before, idle, after, trimmed }));
    const r = (m: Mem): string => `${m.rss} (heap ${m.heapUsed}, external ${m.external})`;
    console.log('| idle gRPC streams | active | RSS MiB (JS heap, external) after a full GC |');
    console.log('|---|---|---|');
    console.log(`| before | ${before.stats.activeStreams ?? 0} | ${r(before.mem)} |`);
    console.log(`| ${n} holding their config, ${audioMs > 0 ? `after ${audioMs} ms of audio` : 'no audio'} | ${idle.stats.activeStreams ?? '?'} | ${r(idle.mem)}; +${Math.round(((idle.mem.rss - before.mem.rss) * 1024) / n)} KiB RSS per stream |`);
    console.log(`| after they were cancelled (and the server's trims) | ${after.stats.activeStreams ?? 0} | ${r(after.mem)} |`);
    console.log(`| ... then one more malloc_trim(0) (${trimmed.trimMs} ms) | ${trimmed.stats.activeStreams ?? 0} | ${r(trimmed.mem)} |`);
  } finally {
    child.kill('SIGTERM');
  }
}

void main().then(() => process.exit(0), (e: unknown) => {
  console.error(e);
  process.exit(1);
});
