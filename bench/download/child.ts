/**
 * One measurement of bench/download/run.ts, in its own process so that its peak RSS is its own:
 *   node dist/bench/download/child.js <local|url|server> <json args>
 *
 *  local   the job's analysis of a local file (pipelineAnalyzer, as the worker runs it) + JSON
 *  url     the signed, SSRF-checked download to a temporary file, then the same analysis
 *  server  a whole `createServer` service processing a URL job (download + analysis + results)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reportFromChild, Section } from '../measure';
import { defaultConfig } from '../../src/config';
import { createDownloadService } from '../../src/download';
import { buildEnvelope } from '../../src/analysis/postprocess';
import { pipelineAnalyzer } from '../../src/pipeline/analyzer';

interface Args {
  file?: string;
  url?: string;
  modelsDir: string;
  signingKeyFile: string;
  models: string[];
  channel: number | null;
}

const MB = 1024 * 1024;

async function analyze(path: string, args: Args): Promise<Record<string, unknown>> {
  const analyzer = pipelineAnalyzer(args.modelsDir);
  const sec = new Section();
  try {
    const channels = await sec.time(() =>
      analyzer.analyze(
        { path },
        {
          models: args.models,
          outputPeriodMs: 1024,
          includeSummary: true,
          includeTransitions: false,
          includeRaw: false,
          ...(args.channel !== null ? { channel: args.channel } : {}),
        },
        { maxDurationSec: 3600 },
      ),
    );
    const json = JSON.stringify(buildEnvelope('bench', channels));
    return { analyzeWallSec: +sec.wallSec.toFixed(2), analyzeCpuSec: +sec.cpuSec.toFixed(2), resultMiB: +(Buffer.byteLength(json) / MB).toFixed(2) };
  } finally {
    await analyzer.close?.();
  }
}

async function main(): Promise<void> {
  const [mode, raw] = process.argv.slice(2);
  const args = JSON.parse(raw ?? '{}') as Args;
  const work = mkdtempSync(join(tmpdir(), 'auris-bench-dl-'));
  const config = defaultConfig({
    host: '127.0.0.1',
    port: 0,
    dataDir: work,
    modelsDir: args.modelsDir,
    concurrency: 1,
    apiKeys: [{ key: 'bench-download-key', organizationId: 'bench', projectId: 'bench' }],
    download: { signingKeyFile: args.signingKeyFile, urlAllowlist: ['127.0.0.1'] },
    logLevel: 'warn',
  });
  try {
    if (mode === 'local') {
      reportFromChild(await analyze(args.file!, args));
    } else if (mode === 'url') {
      const { downloader } = await createDownloadService(config);
      const dest = join(work, 'download');
      const sec = new Section();
      const got = await sec.time(() =>
        downloader.download({ identity: { url: args.url!, jobId: 'bench-job', organizationId: 'bench', projectId: 'bench' }, destPath: dest, maxDurationSec: 3600, channel: args.channel }),
      );
      const rssAfterDownloadMiB = process.memoryUsage.rss() / MB;
      const a = await analyze(dest, args);
      reportFromChild({ downloadMiB: +(got.bytes / MB).toFixed(1), downloadWallSec: +sec.wallSec.toFixed(2), rssAfterDownloadMiB: +rssAfterDownloadMiB.toFixed(1), ...a });
    } else if (mode === 'server') {
      const { createServer } = await import('../../src/http/server');
      const server = await createServer({ config, logger: false });
      await server.listen();
      const idleRssMiB = process.memoryUsage.rss() / MB;
      const t0 = Date.now();
      const q = `models=${args.models.join(',')}&output_period=1024&include_summary=true${args.channel !== null ? `&channel=${args.channel}` : ''}`;
      const res = await fetch(`${server.url}/file-processing/jobs?${q}`, {
        method: 'POST',
        headers: { 'x-api-key': 'bench-download-key', 'content-type': 'application/json' },
        body: JSON.stringify({ url: args.url }),
      });
      const { job_id } = (await res.json()) as { job_id: string };
      let job: { status: string; error: unknown; source: { size_bytes: number } };
      for (;;) {
        job = (await (await fetch(`${server.url}/file-processing/jobs/${job_id}`, { headers: { 'x-api-key': 'bench-download-key' } })).json()) as typeof job;
        if (job.status === 'succeeded' || job.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      await server.close();
      if (job.status !== 'succeeded') throw new Error(`job failed: ${JSON.stringify(job.error)}`);
      reportFromChild({ jobWallSec: +((Date.now() - t0) / 1000).toFixed(2), downloadMiB: +(job.source.size_bytes / MB).toFixed(1), idleRssMiB: +idleRssMiB.toFixed(1) });
    } else {
      throw new Error(`unknown mode ${mode}`);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
