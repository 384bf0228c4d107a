/**
 * End to end with the real pipeline and the real models (models/): a generated
 * tone + silence file through both body methods, the summary / transitions / raw flags,
 * channel selection and decoder errors as job failures; and `auris serve` as a real
 * process: development key in the log, SIGKILL in the middle of a job, restart, finished.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { envSkip, guardEnv, modelsMissing } from '../env';
import type { AurisServer } from '../../src/http/server';
import { api, createJob, KEY_A, sleep, sox, startServer, tempDir, waitFor, waitForJob, type JobJson } from './helpers';

const ROOT = resolve(__dirname, '..', '..', '..');
const MODELS = join(ROOT, 'models');
const skip = envSkip(modelsMissing(MODELS));

interface Step {
  timestamp: number;
  results: Record<string, { result: string; confidence: number }>;
  raw?: Record<string, Record<string, number>>;
}
interface Channel {
  time_series: Step[];
  summary?: Record<string, Record<string, number>>;
  transitions?: Record<string, Array<{ timestamp_start: number; timestamp_end: number; result: string; confidence: number }>>;
}
interface Envelope {
  job_id: string;
  result: { channels: Record<string, Channel> };
}

describe('end to end with the real models', { skip }, () => {
  const dir = tempDir();
  let server: AurisServer;
  let files: Server;
  let filesUrl = '';
  let toneSilence = '';

  before(async () => {
    // 2 s of a 440 Hz tone, then 2 s of digital silence.
    toneSilence = sox(join(dir.path, 'tone-silence.wav'), 16000, 1, 'synth', '2', 'sine', '440', 'pad', '0', '2');
    server = await startServer(join(dir.path, 'data'), { config: { modelsDir: MODELS, concurrency: 1 } });
    files = createHttpServer((req, res) => {
      const p = join(dir.path, (req.url ?? '').replace(/[^a-z0-9.-]/g, ''));
      if (existsSync(p)) res.writeHead(200, { 'content-type': 'audio/wav' }).end(readFileSync(p));
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => files.listen(0, '127.0.0.1', r));
    filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
  });
  after(async () => {
    await server?.close();
    files?.closeAllConnections();
    files?.close();
    dir.cleanup();
  });

  async function run(args: Parameters<typeof createJob>[2]): Promise<{ job: JobJson; results: Envelope }> {
    const res = await createJob(server, KEY_A, args);
    assert.equal(res.status, 201, await res.clone().text());
    const created = (await res.json()) as JobJson;
    const job = await waitForJob(server, KEY_A, created.job_id);
    assert.equal(job.status, 'succeeded', JSON.stringify(job.error));
    const r = await api(server, KEY_A)(`/file-processing/jobs/${job.job_id}/results`);
    assert.equal(r.status, 200);
    return { job, results: (await r.json()) as Envelope };
  }

  function checkToneSilence(ch: Channel, period: number): void {
    const ts = ch.time_series;
    assert.equal(ts.length, Math.ceil(4000 / period));
    ts.forEach((s, i) => assert.equal(s.timestamp, i * period));
    for (const s of ts) {
      const t = s.timestamp;
      const speech = s.results.speech!;
      if (t + period <= 2000) {
        assert.notEqual(speech.result, 'speech', `tone at ${t} ms is not speech`);
        assert.notEqual(speech.result, 'silence', `tone at ${t} ms is not silence`);
        assert.notEqual(s.results.arousal!.result, 'silence');
        assert.equal(s.results.arousal!.result, 'no_speech');
        assert.equal(s.results.gender!.result, 'no_speech');
        if (s.results.emotions) assert.equal(s.results.emotions.result, 'no_speech');
      } else if (t >= 2000) {
        for (const m of Object.keys(s.results)) {
          assert.equal(s.results[m]!.result, 'silence', `${m} at ${t} ms`);
          assert.equal(s.results[m]!.confidence, 1);
        }
      }
      for (const m of Object.keys(s.results)) {
        const c = s.results[m]!.confidence;
        assert.ok(c >= 0 && c <= 1);
      }
    }
  }

  it('direct upload, all flags: time series, summary, transitions and raw values match the file', async () => {
    const { job, results } = await run({
      audio: readFileSync(toneSilence),
      contentType: 'audio/wav',
      query: 'models=speech,arousal,gender,emotions&output_period=512&include_summary=true&include_transitions=true&include_raw_values=true',
    });
    assert.deepEqual(job.audio, { duration_sec: 4, channels: 1, sample_rate: 16000, format: 'WAV', processed_channels: 1 });
    assert.equal(results.job_id, job.job_id);
    assert.deepEqual(Object.keys(results.result.channels), ['0']);
    const ch = results.result.channels['0']!;
    checkToneSilence(ch, 512);

    // raw: every class key of each model, probabilities summing to ~1
    const rawKeys: Record<string, string[]> = {
      speech: ['music', 'other', 'speech'], arousal: ['high', 'low', 'neutral'], gender: ['female', 'male'], emotions: ['happy', 'irritated', 'neutral', 'tired'],
    };
    for (const s of ch.time_series) {
      assert.ok(s.raw, 'raw present');
      for (const [m, keys] of Object.entries(rawKeys)) {
        assert.deepEqual(Object.keys(s.raw[m]!).sort(), keys);
        const sum = Object.values(s.raw[m]!).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum - 1) < 0.01, `${m} raw sums to 1`);
      }
    }

    // summary: the spec's keys, fractions summing to 1, half silence
    const summary = ch.summary!;
    assert.deepEqual(Object.keys(summary.speech!).sort(), ['music_fraction', 'other_fraction', 'silence_fraction', 'speech_fraction']);
    assert.deepEqual(Object.keys(summary.arousal!).sort(), ['high_fraction', 'low_fraction', 'neutral_fraction', 'no_speech_fraction', 'silence_fraction']);
    assert.deepEqual(Object.keys(summary.gender!).sort(), ['female_fraction', 'male_fraction', 'other_fraction', 'silence_fraction', 'unknown_fraction']);
    assert.deepEqual(Object.keys(summary.emotions!), ['happy_fraction', 'irritated_fraction', 'neutral_fraction', 'tired_fraction', 'no_speech_fraction', 'silence_fraction']);
    for (const m of Object.values(summary)) assert.ok(Math.abs(Object.values(m).reduce((a, b) => a + b, 0) - 1) < 1e-3);
    assert.ok(Math.abs(summary.speech!.silence_fraction! - 0.5) < 0.1, `silence ~half: ${summary.speech!.silence_fraction}`);
    assert.ok(summary.speech!.speech_fraction! < 0.2);

    // transitions: contiguous, the last segment is silence up to the end
    for (const m of ['speech', 'arousal', 'gender', 'emotions']) {
      const segs = ch.transitions![m]!;
      assert.equal(segs[0]!.timestamp_start, 0);
      for (let i = 1; i < segs.length; i++) {
        assert.equal(segs[i]!.timestamp_start, segs[i - 1]!.timestamp_end);
        assert.notEqual(segs[i]!.result, segs[i - 1]!.result);
      }
      assert.equal(segs.at(-1)!.result, 'silence');
      assert.equal(segs.at(-1)!.timestamp_end, 4000);
    }
  });

  it('URL method without flags: only time_series', async () => {
    const { job, results } = await run({ url: `${filesUrl}/tone-silence.wav`, query: 'models=speech,arousal,gender&output_period=1024' });
    assert.equal(job.source.size_bytes, readFileSync(toneSilence).length);
    const ch = results.result.channels['0']!;
    assert.deepEqual(Object.keys(ch), ['time_series']);
    assert.equal(ch.time_series[0]!.raw, undefined);
    checkToneSilence(ch, 1024);
  });

  it('stereo: each channel analysed on its own content (speech left, a tone right), or only the one asked for; a missing channel fails with INVALID_CHANNEL', async () => {
    // Left: espeak-ng speech; right: a 440 Hz tone as long as the speech.
    const spoken = join(dir.path, 'spoken.wav');
    execFileSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', spoken, 'Good morning, I would like to ask about the delivery of my parcel.'], { timeout: 30_000 });
    const left = join(dir.path, 'left.wav');
    execFileSync('sox', [spoken, '-r', '16000', '-c', '1', '-b', '16', left]);
    const seconds = Number(execFileSync('soxi', ['-D', left], { encoding: 'utf8' }));
    const right = sox(join(dir.path, 'right.wav'), 16000, 1, 'synth', String(seconds), 'sine', '440', 'vol', '0.5');
    const stereo = join(dir.path, 'stereo.wav');
    execFileSync('sox', ['-M', left, right, stereo]);

    const both = await run({ audio: readFileSync(stereo), query: 'models=speech,gender&output_period=512' });
    assert.deepEqual(Object.keys(both.results.result.channels).sort(), ['0', '1']);
    assert.equal(both.job.audio?.processed_channels, 2);
    const labels = (ch: string, m: string): string[] => both.results.result.channels[ch]!.time_series.map((s) => s.results[m]!.result);
    const share = (xs: string[], x: string): number => xs.filter((y) => y === x).length / xs.length;
    const voicedLeft = labels('0', 'speech').filter((l) => l !== 'silence');
    assert.ok(share(voicedLeft, 'speech') >= 0.8, `left: ${voicedLeft.join(' ')}`);
    assert.equal(share(labels('1', 'speech'), 'speech'), 0, `right (a tone): ${labels('1', 'speech').join(' ')}`);
    assert.equal(share(labels('1', 'speech'), 'silence'), 0, 'right is never silent');
    assert.ok(labels('0', 'gender').some((l) => l === 'male' || l === 'female'), 'left has a voice');
    assert.deepEqual([...new Set(labels('1', 'gender'))], ['no_speech'], 'right has none');

    const one = await run({ audio: readFileSync(stereo), query: 'models=speech,gender&output_period=512&channel=1' });
    assert.deepEqual(Object.keys(one.results.result.channels), ['1']);
    assert.equal(one.job.audio?.processed_channels, 1);
    assert.deepEqual(one.results.result.channels['1'], both.results.result.channels['1'], 'channel=1 alone gives the same results as in the stereo job');

    const res = await createJob(server, KEY_A, { audio: readFileSync(stereo), query: 'models=speech&output_period=256&channel=2' });
    const failed = await waitForJob(server, KEY_A, ((await res.json()) as JobJson).job_id);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error?.code, 'INVALID_CHANNEL');
  });

  it('an Ogg Opus voice note uploaded as audio/ogg: speech, and the voice\'s gender', async () => {
    const wav = join(dir.path, 'note.wav');
    execFileSync('espeak-ng', ['-v', 'en-us', '-s', '150', '-w', wav, 'Hello, I am calling about my order from last week. It has not arrived yet.'], { timeout: 30_000 });
    const opus = join(dir.path, 'note.opus');
    execFileSync('ffmpeg', ['-v', 'error', '-y', '-i', wav, '-ac', '1', '-c:a', 'libopus', '-b:a', '24k', opus]);
    const { job, results } = await run({ audio: readFileSync(opus), contentType: 'audio/ogg', query: 'models=speech,gender&output_period=1024' });
    assert.equal(job.status, 'succeeded');
    assert.equal(job.source.content_type, 'audio/ogg');
    assert.equal(job.audio?.format, 'OGG');
    assert.equal(job.audio?.sample_rate, 48000);
    const voiced = results.result.channels['0']!.time_series.filter((s) => s.results.speech!.result !== 'silence');
    assert.ok(voiced.length >= 3, `${voiced.length} voiced steps`);
    const speech = voiced.filter((s) => s.results.speech!.result === 'speech').length;
    assert.ok(speech >= 0.8 * voiced.length, `${speech} of ${voiced.length} voiced steps are speech`);
    const male = voiced.filter((s) => s.results.gender!.result === 'male').length; // espeak-ng's default en-us voice is male
    assert.ok(male >= 0.6 * voiced.length, `${male} of ${voiced.length} voiced steps are male`);
  });

  it('a file that is not audio fails the job with a decoder code', async () => {
    const res = await createJob(server, KEY_A, { audio: Buffer.from('this is not audio at all, just text'.repeat(20)), contentType: 'audio/wav' });
    const failed = await waitForJob(server, KEY_A, ((await res.json()) as JobJson).job_id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error!.code, /^(UNSUPPORTED_FORMAT|CORRUPT_AUDIO)$/);
  });
});

describe('`auris serve` as a process', { skip }, () => {
  const dir = tempDir();
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    dir.cleanup();
  });

  function serve(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; log: string[] }> {
    const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve', '--port', '0', '--grpc-port', '0'], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: join(dir.path, 'data'), MODELS_DIR: MODELS, CONCURRENCY: '1', ...guardEnv(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const log: string[] = [];
    return new Promise((resolvePromise, reject) => {
      let buf = '';
      child.stdout!.on('data', (d: Buffer) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          log.push(line);
          const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(line);
          if (m && line.includes('auris serving')) resolvePromise({ child, url: m[1]!, log });
        }
      });
      child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${log.join('\n')}`)));
    });
  }

  it('prints a development key once when none is configured; logs are JSON', async () => {
    const { child, url, log } = await serve({});
    const lines = log.map((l) => JSON.parse(l) as { msg: string; api_key?: string; level: number });
    const dev = lines.filter((l) => l.api_key);
    assert.equal(dev.length, 1);
    const key = dev[0]!.api_key!;
    assert.match(key, /^dev_/);
    assert.equal((await fetch(`${url}/file-processing/jobs/00000000-0000-4000-8000-000000000000`, { headers: { 'x-api-key': key } })).status, 404);
    assert.equal((await fetch(`${url}/file-processing/jobs/00000000-0000-4000-8000-000000000000`)).status, 401);
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    assert.equal(child.exitCode, 0);
  });

  it('SIGKILL in the middle of a job: after a restart the job is finished and served', async () => {
    const keysFile = join(dir.path, 'keys.txt');
    writeFileSync(keysFile, `# test keys\n${KEY_A}:org-a:proj-a\n`);
    const env = { API_KEYS_FILE: keysFile };
    // 8 minutes of noise: long enough to catch it processing.
    const long = sox(join(dir.path, 'long.wav'), 8000, 1, 'synth', '480', 'pinknoise', 'vol', '0.3');
    const first = await serve(env);
    const res = await fetch(`${first.url}/file-processing/jobs?models=speech,arousal,gender&output_period=1024&include_summary=true`, {
      method: 'POST',
      headers: { 'x-api-key': KEY_A, 'content-type': 'audio/wav' },
      body: readFileSync(long),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const job = (await res.json()) as JobJson;
    const jobUrl = `/file-processing/jobs/${job.job_id}`;
    await waitFor(async () => ((await (await fetch(first.url + jobUrl, { headers: { 'x-api-key': KEY_A } })).json()) as JobJson).status === 'processing', 20_000, 'processing');
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    const second = await serve(env);
    try {
      let last: JobJson | undefined;
      await waitFor(
        async () => {
          last = (await (await fetch(second.url + jobUrl, { headers: { 'x-api-key': KEY_A } })).json()) as JobJson;
          return last.status === 'succeeded' || last.status === 'failed';
        },
        120_000,
        'the job to finish after the restart',
      );
      assert.equal(last!.status, 'succeeded', JSON.stringify(last));
      const r = await fetch(`${second.url}${jobUrl}/results`, { headers: { 'x-api-key': KEY_A } });
      assert.equal(r.status, 200);
      const env2 = (await r.json()) as Envelope;
      assert.equal(env2.result.channels['0']!.time_series.length, Math.ceil(480_000 / 1024));
    } finally {
      second.child.kill('SIGTERM');
      await new Promise((r) => second.child.once('exit', r));
    }
    await sleep(10);
  });
});
