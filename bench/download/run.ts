/**
 * Peak RSS of the URL method against local files: a 1-hour 44.1 kHz stereo 16-bit WAV
 * (635 MB; channel 0 is analysed, so the combined duration is the 1-hour limit) is
 *
 *   local   analysed from disk, as the job worker analyses a file,
 *   url     downloaded by the signed, SSRF-checked downloader (streamed to a temporary
 *           file) from a file host in this process, then analysed the same way,
 *   server  processed as a URL job by a whole service (createServer) in its own process.
 *
 * Each runs in a child process (peak RSS = process.resourceUsage().maxRSS of the child). The
 * file host here verifies every request with verifyDownloadRequest. Passes when the URL path
 * stays within the local path's peak RSS + 32 MiB (the download must not hold the file).
 *
 *   npm run build:ts && node dist/bench/download/run.js [--minutes 60] [--skip-server]
 *
 * Writes bench/out/download-rss.json. Input generated with sox into bench/out/ (reused).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadKeyRing } from '../../src/download/keys';
import { MemoryJtiStore, verifyDownloadRequest } from '../../src/download/verify';

const ROOT = resolve(__dirname, '..', '..', '..');
const OUT = join(ROOT, 'bench', 'out');
const MODELS = join(ROOT, 'models');
const MARK = 'BENCH_RESULT ';
const SLACK_MIB = 32;

interface Result {
  maxRssMiB: number;
  cpuSec: number;
  wallSec: number;
  data: Record<string, unknown>;
}

function runChild(mode: string, args: unknown): Promise<Result> {
  return new Promise((res, rej) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [join(__dirname, 'child.js'), mode, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(MARK));
      if (code !== 0 || !line) return rej(new Error(`${mode} failed (exit ${code}): ${err.slice(-3000)}`));
      const r = JSON.parse(line.slice(MARK.length)) as { data: Record<string, unknown>; usage: NodeJS.ResourceUsage };
      res({
        maxRssMiB: +(r.usage.maxRSS / 1024).toFixed(1),
        cpuSec: +((r.usage.userCPUTime + r.usage.systemCPUTime) / 1e6).toFixed(2),
        wallSec: +((Date.now() - t0) / 1000).toFixed(2),
        data: r.data,
      });
    });
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { minutes: { type: 'string', default: '60' }, 'skip-server': { type: 'boolean', default: false } } });
  const minutes = Number(values.minutes);
  mkdirSync(OUT, { recursive: true });
  const file = join(OUT, `download-v1-${minutes}min-44k-stereo.wav`);
  if (!existsSync(file)) {
    process.stdout.write(`generating ${file} ...\n`);
    // left: a slow sine sweep with tremolo; right: pink noise (cheap to make, not silence)
    execFileSync('sox', ['-V1', '-n', '-r', '44100', '-c', '2', '-b', '16', file, 'synth', String(minutes * 60), 'sine', '200-2000', 'pinknoise', 'vol', '0.3'], { stdio: 'inherit' });
  }
  const bytes = statSync(file).size;

  const work = mkdtempSync(join(tmpdir(), 'auris-bench-dl-keys-'));
  // a key generated here signs in the children too (SIGNING_KEY_FILE), so this host can verify
  const ring = await loadKeyRing({ dataDir: work });
  const generated = join(work, 'keys', 'download-signing-key.pem');
  const seen = new MemoryJtiStore();
  let verified = 0;
  let refused = 0;
  const host = createServer((req, res) => {
    verifyDownloadRequest(req.headers, { jwks: ring.jwks(), organizationId: 'bench', projectId: 'bench', expectedUrl: `${base}${req.url}`, seenJti: seen }).then(
      () => {
        verified++;
        res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': bytes });
        createReadStream(file).pipe(res);
      },
      () => {
        refused++;
        res.writeHead(403).end();
      },
    );
  });
  await new Promise<void>((r) => host.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(host.address() as AddressInfo).port}`;
  const args = { file, url: `${base}/in.wav`, modelsDir: MODELS, signingKeyFile: generated, models: ['speech', 'arousal', 'gender'], channel: 0 };

  const rows: Record<string, Result> = {};
  try {
    for (const mode of ['local', 'url', ...(values['skip-server'] ? [] : ['server'])]) {
      process.stdout.write(`${mode} ...\n`);
      rows[mode] = await runChild(mode, args);
      process.stdout.write(`  peak RSS ${rows[mode].maxRssMiB} MiB, CPU ${rows[mode].cpuSec} s, wall ${rows[mode].wallSec} s ${JSON.stringify(rows[mode].data)}\n`);
    }
  } finally {
    host.closeAllConnections();
    host.close();
    rmSync(work, { recursive: true, force: true });
  }
  const bound = rows.local!.maxRssMiB + SLACK_MIB;
  const ok = rows.url!.maxRssMiB <= bound;
  const report = {
    measured_at: new Date().toISOString(),
    input: { file: file.replace(ROOT + '/', ''), minutes, sample_rate: 44100, channels: 2, bits: 16, bytes, analysed_channel: 0 },
    peak_rss_mib: Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, v.maxRssMiB])),
    rows,
    bound_mib: bound,
    url_within_bound: ok,
    host: { verified, refused },
  };
  writeFileSync(join(OUT, 'download-rss.json'), JSON.stringify(report, null, 2) + '\n');
  process.stdout.write(
    `\ninput: ${minutes} min 44.1 kHz stereo WAV, ${(bytes / 2 ** 20).toFixed(0)} MiB, channel 0 analysed\n` +
      `peak RSS: local ${rows.local!.maxRssMiB} MiB, url ${rows.url!.maxRssMiB} MiB${rows.server ? `, server (URL job) ${rows.server.maxRssMiB} MiB` : ''}\n` +
      `url within local + ${SLACK_MIB} MiB (${bound.toFixed(1)} MiB): ${ok ? 'yes' : 'NO'}; host verified ${verified} request(s), refused ${refused}\n`,
  );
  return ok && refused === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  },
);
