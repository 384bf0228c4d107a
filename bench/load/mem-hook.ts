/**
 * Debug-only memory probe for bench/load/mixed.ts, preloaded into the server by the bench alone:
 *
 *   node --expose-gc --require dist/bench/load/mem-hook.js dist/src/cli/main.js serve ...
 *
 * Nothing in src/ loads it, so production servers never have it. It only arms itself when
 * AURIS_BENCH_MEM_HOOK=1 and gc() is exposed; then SIGUSR2 runs a full GC and writes one line
 * `AURIS_MEM {"seq":n,"rss":..,"heapUsed":..,...}` (bytes, process.memoryUsage()) to stderr.
 */
let seq = 0;
const forceGc = (globalThis as { gc?: () => void }).gc;
if (process.env.AURIS_BENCH_MEM_HOOK === '1' && typeof forceGc === 'function') {
  process.on('SIGUSR2', () => {
    forceGc();
    forceGc();
    process.stderr.write(`AURIS_MEM ${JSON.stringify({ seq: ++seq, ...process.memoryUsage() })}\n`);
  });
}

export {};
