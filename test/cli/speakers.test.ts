/**
 * --num-speakers / --max-speakers of the CLI, with the shipped models on test/fixtures/demo.flac
 * (two espeak-ng voices): `analyze` locally, `jobs submit` and `stream` (gRPC and WebSocket)
 * against a real service on 127.0.0.1. The counts are checked by the server's rules and
 * messages (src/analysis/options.ts) before anything runs. The number of speakers the model
 * estimates on its own is not asserted: only what the counts fix.
 */
import { strict as assert } from 'node:assert';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { packageRoot } from '../../src/inference';
import { runAsync } from '../grpc/helpers';
import { KEY_A, startStreamingApp } from '../websocket/helpers';

const CLI = path.join(packageRoot(), 'dist', 'src', 'cli', 'main.js');
const DEMO = path.join(packageRoot(), 'test', 'fixtures', 'demo.flac');
const cli = (args: string[]) => runAsync(process.execPath, [CLI, ...args], { env: { ...process.env, AURIS_URL: '', AURIS_GRPC_ADDRESS: '', AURIS_INFERENCE_THREADS: '1' } });

interface Channel {
  time_series: Array<{ results: Record<string, { result: string }> }>;
  summary?: Record<string, Record<string, number>>;
}
const speakerKeys = (fractions: Record<string, number>): string[] => Object.keys(fractions).filter((k) => /^speaker_\d+_fraction$/.test(k));

/** The bad values and the server's message for each (exit 1, nothing on stdout). */
const INVALID: Array<[string[], RegExp]> = [
  [['--models', 'speakers', '--num-speakers', '0'], /\[INVALID_ARGUMENT\]: num_speakers must be an integer between 1 and 20, got 0/],
  [['--models', 'speakers', '--max-speakers', '21'], /\[INVALID_ARGUMENT\]: max_speakers must be an integer between 1 and 20, got 21/],
  [['--models', 'speakers', '--num-speakers', '1.5'], /\[INVALID_ARGUMENT\]: num_speakers must be an integer between 1 and 20, got 1\.5/],
  [['--models', 'speakers', '--num-speakers', 'two'], /\[INVALID_ARGUMENT\]: num_speakers: not a number: "two"/],
  [['--models', 'speakers', '--num-speakers', '3', '--max-speakers', '2'], /\[INVALID_ARGUMENT\]: num_speakers \(3\) must not exceed max_speakers \(2\)/],
  [['--models', 'speech', '--num-speakers', '2'], /\[INVALID_ARGUMENT\]: num_speakers applies to the speakers model, which is not requested/],
];

describe('auris analyze --num-speakers / --max-speakers', () => {
  it('--num-speakers 2: speaker labels in the steps, exactly speaker_1 and speaker_2 in the summary', async () => {
    const r = await cli(['analyze', DEMO, '--models', 'speakers', '--num-speakers', '2', '--summary', '--output-period', '512']);
    assert.equal(r.code, 0, r.stderr);
    const ch = (JSON.parse(r.stdout) as { result: { channels: Record<string, Channel> } }).result.channels['0']!;
    const labels = new Set(ch.time_series.map((s) => s.results['speakers']!.result));
    assert.ok([...labels].some((l) => /^speaker_\d+$/.test(l)), [...labels].join(','));
    for (const l of labels) assert.match(l, /^(speaker_[12]|no_speech|silence)$/);
    assert.deepEqual(speakerKeys(ch.summary!['speakers']!), ['speaker_1_fraction', 'speaker_2_fraction']);
    assert.deepEqual(Object.keys(ch.summary!['speakers']!).filter((k) => !k.startsWith('speaker_')).sort(), ['no_speech_fraction', 'silence_fraction']);
  });

  it('--max-speakers 1: one speaker; without --models every installed model runs (speakers among them)', async () => {
    const r = await cli(['analyze', DEMO, '--max-speakers', '1', '--summary', '--output-period', '1024']);
    assert.equal(r.code, 0, r.stderr);
    const ch = (JSON.parse(r.stdout) as { result: { channels: Record<string, Channel> } }).result.channels['0']!;
    assert.ok('speech' in ch.summary! && 'speakers' in ch.summary!, Object.keys(ch.summary!).join(','));
    assert.deepEqual(speakerKeys(ch.summary!['speakers']!), ['speaker_1_fraction']);
  });

  it('invalid values: the server\'s message and code on stderr, exit 1, nothing on stdout', async () => {
    for (const [args, message] of INVALID) {
      const r = await cli(['analyze', DEMO, ...args]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.equal(r.stdout, '');
    }
  });

  it('the help texts name the speakers model and the two options', async () => {
    for (const cmd of ['analyze', 'jobs', 'stream']) {
      const r = await cli([cmd, '--help']);
      assert.equal(r.code, 0);
      assert.match(r.stdout, /speakers \(who speaks when/, cmd);
      assert.match(r.stdout, /--num-speakers <n> +.*1\.\.20/, cmd);
      assert.match(r.stdout, /--max-speakers <n> +.*1\.\.20/, cmd);
    }
    assert.match((await cli(['--help'])).stdout, /speech, arousal, gender, emotions, speakers/);
  });
});

describe('auris jobs submit / stream --num-speakers / --max-speakers (real service)', { timeout: 240_000 }, () => {
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  before(async () => {
    app = await startStreamingApp();
  });
  after(async () => {
    await app?.cleanup();
  });

  it('jobs submit --num-speakers 2: the job records it, the summary has exactly speaker_1 and speaker_2', async () => {
    const r = await cli(['jobs', 'submit', DEMO, '--url', app.url, '--api-key', KEY_A, '--models', 'speakers', '--num-speakers', '2', '--max-speakers', '4', '--summary', '--output-period', '512']);
    assert.equal(r.code, 0, r.stderr);
    const env = JSON.parse(r.stdout) as { job_id: string; result: { channels: Record<string, Channel> } };
    assert.deepEqual(speakerKeys(env.result.channels['0']!.summary!['speakers']!), ['speaker_1_fraction', 'speaker_2_fraction']);
    const rec = (await (await fetch(`${app.url}/file-processing/jobs/${env.job_id}`, { headers: { 'x-api-key': KEY_A } })).json()) as { request: Record<string, unknown> };
    assert.equal(rec.request['num_speakers'], 2);
    assert.equal(rec.request['max_speakers'], 4);
  });

  it('jobs submit: invalid values are refused before anything is sent (exit 1, the same messages)', async () => {
    const before = ((await (await fetch(`${app.url}/file-processing/jobs`, { headers: { 'x-api-key': KEY_A } })).json()) as { jobs: unknown[] }).jobs.length;
    for (const [args, message] of INVALID) {
      const r = await cli(['jobs', 'submit', DEMO, '--url', app.url, '--api-key', KEY_A, ...args]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
      assert.match(r.stderr, /^auris jobs: error /);
    }
    const afterwards = ((await (await fetch(`${app.url}/file-processing/jobs`, { headers: { 'x-api-key': KEY_A } })).json()) as { jobs: unknown[] }).jobs.length;
    assert.equal(afterwards, before, 'no job created');
  });

  it('stream --max-speakers 1 over gRPC and --num-speakers 1 over the WebSocket: one speaker in the summary', async () => {
    for (const transport of [['--grpc', `127.0.0.1:${app.grpcPort}`, '--max-speakers', '1'], ['--transport', 'ws', '--url', app.url, '--num-speakers', '1']]) {
      const r = await cli(['stream', DEMO, ...transport, '--api-key', KEY_A, '--models', 'speech,speakers', '--summary', '--output-period', '512']);
      assert.equal(r.code, 0, `${transport.join(' ')}: ${r.stderr}`);
      const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { summary?: Record<string, Record<string, number>>; results?: Record<string, { result: string }>; final?: boolean });
      const summary = lines.find((l) => l.summary)!.summary!;
      assert.deepEqual(speakerKeys(summary['speakers']!), ['speaker_1_fraction'], transport.join(' '));
      // every final names a speaker; a provisional line may hold speech alone (its first tier: docs/streaming.md)
      for (const l of lines) if (l.results && l.final !== false) assert.ok(l.results['speakers'], JSON.stringify(l));
      for (const l of lines) if (l.results?.['speakers']) assert.match(l.results['speakers'].result, /^(speaker_1|no_speech|silence)$/);
    }
  });

  it('stream: invalid values exit 1 with the same messages', async () => {
    for (const [args, message] of INVALID) {
      const r = await cli(['stream', DEMO, '--transport', 'ws', '--url', app.url, '--api-key', KEY_A, ...args]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message, args.join(' '));
    }
  });
});
