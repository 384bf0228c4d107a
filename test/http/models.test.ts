/**
 * Models beyond the built-in three, through the REST service with the real pipeline:
 *  - the generic policy (docs/results.md "Other models"): an extra model's labels are its raw
 *    keys (argmax of its averaged probabilities) plus `silence`, never gated by the speech
 *    model, summary keys `<raw key>_fraction` + `silence_fraction`;
 *  - a model that fails during a job: the job fails with INFERENCE_FAILED naming the model, the
 *    other jobs and the service are unaffected.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { modelsDirWithBroken } from '../env';
import { api, createJob, KEY_A, sox, startServer, tempDir, waitForJob, type JobJson } from './helpers';

interface Step {
  timestamp: number;
  results: Record<string, { result: string; confidence: number }>;
  raw?: Record<string, Record<string, number>>;
}
interface Results {
  result: { channels: Record<string, { time_series: Step[]; summary?: Record<string, Record<string, number>> }> };
}

describe('extra models through the REST service', () => {
  const dir = tempDir();
  let server: AurisServer;
  let toneSilence: Buffer;

  before(async () => {
    const models = modelsDirWithBroken(join(dir.path, 'models'), [{ name: 'laughter', rawKeys: ['laugh', 'quiet'], seed: 7 }]);
    // 2 s of a 440 Hz tone, then 2 s of digital silence.
    toneSilence = readFileSync(sox(join(dir.path, 'tone-silence.wav'), 16000, 1, 'synth', '2', 'sine', '440', 'pad', '0', '2'));
    server = await startServer(join(dir.path, 'data'), { config: { modelsDir: models, concurrency: 2 } });
  });
  after(async () => {
    await server?.close();
    dir.cleanup();
  });

  async function run(query: string): Promise<JobJson> {
    const res = await createJob(server, KEY_A, { audio: toneSilence, query });
    assert.equal(res.status, 201, await res.clone().text());
    return waitForJob(server, KEY_A, ((await res.json()) as JobJson).job_id);
  }

  it('the generic policy: labels are the raw keys (argmax) plus silence, no speech gating, one summary fraction per raw key', async () => {
    const job = await run('models=laughter,speech&output_period=256&include_raw_values=true&include_summary=true');
    assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
    const res = (await (await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`)).json()) as Results;
    const ch = res.result.channels['0']!;
    assert.equal(ch.time_series.length, Math.ceil(4000 / 256));
    for (const s of ch.time_series) {
      const { result, confidence } = s.results['laughter']!;
      const raw = s.raw!['laughter']!;
      assert.deepEqual(Object.keys(raw).sort(), ['laugh', 'quiet']);
      if (s.timestamp + 256 <= 2000) {
        // The tone: the speech model does not call it speech, the extra model is not gated.
        assert.notEqual(s.results['speech']!.result, 'speech');
        const winner = raw['laugh']! >= raw['quiet']! ? 'laugh' : 'quiet';
        assert.equal(result, winner, `label at ${s.timestamp} ms is the argmax of ${JSON.stringify(raw)}`);
        assert.ok(Math.abs(confidence - Math.max(raw['laugh']!, raw['quiet']!)) <= 1e-4, `confidence ${confidence} vs raw ${JSON.stringify(raw)}`);
      } else if (s.timestamp >= 2000) {
        assert.equal(result, 'silence', `at ${s.timestamp} ms`);
      }
      assert.ok(['laugh', 'quiet', 'silence'].includes(result), result);
    }
    const summary = ch.summary!['laughter']!;
    assert.deepEqual(Object.keys(summary), ['laugh_fraction', 'quiet_fraction', 'silence_fraction']);
    assert.ok(Math.abs(Object.values(summary).reduce((a, b) => a + b, 0) - 1) < 1e-3);
    assert.ok(Math.abs(summary['silence_fraction']! - 0.5) < 0.1, JSON.stringify(summary));
  });

  it('an unknown model name lists the extra models among the valid ones', async () => {
    const res = await createJob(server, KEY_A, { audio: toneSilence, query: 'models=nope&output_period=256' });
    assert.equal(res.status, 400);
    const p = (await res.json()) as { code: string; valid_models: string[] };
    assert.equal(p.code, 'UNKNOWN_MODEL');
    assert.deepEqual([...p.valid_models].sort(), ['broken', 'laughter', 'speech']);
  });

  it('a model failing during a job fails that job with INFERENCE_FAILED; a job beside it succeeds', async () => {
    const [failed, ok] = await Promise.all([run('models=broken&output_period=1024'), run('models=laughter&output_period=1024')]);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'INFERENCE_FAILED', JSON.stringify(failed.error));
    assert.match(failed.error!.message, /broken/);
    assert.equal(ok.status, 'succeeded', JSON.stringify(ok.error));
    const results = await api(server, KEY_A)(`/file-processing/jobs/${failed.job_id}/results`);
    assert.equal(results.status, 409);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200, 'the service stays ready');
  });
});
