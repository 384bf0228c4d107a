/**
 * One auris node for the multi-process tests: what `auris serve` runs (same config flags,
 * same NATS backends, same roles), but with a sleeping fake analyzer instead of the models,
 * so the tests control how long a job takes. Runs only when started by the tests
 * (AURIS_NATS_TEST_NODE=1); the test runner loading this file does nothing.
 *
 * The "audio" of a job is fakeJobAudio(): a WAV-looking header then JSON
 * {token, sleepMs}. The analyzer appends `start|end <pid> <token>` to AURIS_TEST_MARKERS.
 * The node prints `READY <url>` on stdout once it listens; SIGTERM shuts it down cleanly.
 */
import { appendFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { AudioSource } from '../../src/audio/types';
import { loadConfig } from '../../src/config';
import { createServer } from '../../src/http/server';
import type { AnalysisRequest } from '../../src/analysis/options';
import type { Analyzer, AnalyzeRun, ChannelResults } from '../../src/pipeline/analyzer';
import { deferredLogger, natsOptionsFromConfig, openNatsBackends, roleServerOptions } from '../../src/jobs/nats';

export interface FakeJobSpec {
  token: string;
  sleepMs: number;
}

export function fakeJobAudio(spec: FakeJobSpec): Buffer {
  const head = Buffer.alloc(12);
  head.write('RIFF', 0);
  head.writeUInt32LE(0, 4);
  head.write('WAVE', 8);
  return Buffer.concat([head, Buffer.from(JSON.stringify(spec))]);
}

class SleepAnalyzer implements Analyzer {
  constructor(private readonly markers: string) {}

  listModels(): string[] {
    return ['speech', 'arousal', 'gender'];
  }

  async analyze(source: AudioSource, options: AnalysisRequest, hooks: AnalyzeRun): Promise<ChannelResults> {
    const bytes = 'path' in source ? await readFile(source.path) : source.buffer;
    const spec = JSON.parse(bytes.subarray(12).toString('utf8')) as FakeJobSpec;
    appendFileSync(this.markers, `start ${process.pid} ${spec.token}\n`);
    hooks.onInfo?.({ sampleRate: 16000, channels: 1, frames: 16000, durationSec: 1, format: 'WAV', subtype: 'PCM_16' } as never);
    const steps = 10;
    for (let i = 1; i <= steps; i++) {
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, spec.sleepMs / steps);
        hooks.signal?.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            reject(Object.assign(new Error('aborted'), { code: 'ABORTED' }));
          },
          { once: true },
        );
      });
      hooks.onProgress?.(i / steps);
    }
    appendFileSync(this.markers, `end ${process.pid} ${spec.token}\n`);
    const steps2 = Array.from({ length: 3 }, (_, i) => ({
      timestamp: i * options.outputPeriodMs,
      results: Object.fromEntries(options.models.map((m) => [m, { result: 'silence', confidence: 1 }])),
    }));
    return { '0': { time_series: steps2 } };
  }
}

async function main(): Promise<void> {
  const config = loadConfig(process.argv.slice(2), process.env);
  const natsLog = deferredLogger();
  const backends = await openNatsBackends({ ...natsOptionsFromConfig(config, natsLog), reconnectWaitMs: 200 });
  const server = await createServer({
    config,
    backends,
    analyzer: new SleepAnalyzer(process.env.AURIS_TEST_MARKERS ?? '/dev/null'),
    logger: { level: process.env.AURIS_TEST_LOG_LEVEL ?? 'warn', stream: process.stderr } as never,
    ...roleServerOptions(config.role),
  });
  natsLog.attach(server.app.log.child({ component: 'nats' }));
  await server.listen();
  process.stdout.write(`READY ${server.url}\n`);
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (process.env.AURIS_NATS_TEST_NODE === '1') {
  main().catch((err: unknown) => {
    process.stderr.write(`node failed: ${(err as Error).stack}\n`);
    process.exit(1);
  });
}
