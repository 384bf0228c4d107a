/**
 * The `speakers` model through every front door, on committed fixtures made by us (two espeak-ng
 * voices taking turns, clean and through a G.711 phone line; test/fixtures/models/make.sh):
 * a REST file job, a gRPC stream and a WebSocket stream. Each must split the two voices, label the
 * pauses `silence`, number speakers by first appearance, list exactly the speakers found in the
 * summary (with no_speech and silence) and give speaker turns as transitions. A constant model (one
 * speaker) or a random one fails the turn checks.
 */
import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ChannelResult, TimeStepResult } from '../../src/analysis';
import { packageRoot } from '../../src/inference';
import { closeSharedEngines } from '../../src/inference';
import { api, createJob, KEY_A, startServer, tempDir, waitForJob } from '../http/helpers';
import { s16Pcm, startServer as startGrpc, streamPcm, type TestServer } from '../grpc/helpers';
import { startStreamingApp, wsStream } from '../websocket/helpers';

const FIXTURES = path.join(packageRoot(), 'test', 'fixtures', 'models');
const CLEAN = path.join(FIXTURES, 'two-voices.flac');
const PHONE = path.join(FIXTURES, 'two-voices-g711.flac');
const TURNS = (JSON.parse(fs.readFileSync(path.join(FIXTURES, 'two-voices.json'), 'utf8')) as { turns: { speaker: string; start: number; end: number }[] }).turns;
const PERIOD = 256;

/** The label most steps inside each reference turn carry (0.5 s kept clear of its edges). */
function turnLabels(steps: readonly { timestamp: number; results: Record<string, { result: string }> }[]): string[] {
  return TURNS.map((t) => {
    const counts = new Map<string, number>();
    for (const s of steps) {
      const at = s.timestamp / 1000;
      if (at >= t.start + 0.5 && at + PERIOD / 1000 <= t.end - 0.5) {
        const l = s.results['speakers']!.result;
        counts.set(l, (counts.get(l) ?? 0) + 1);
      }
    }
    return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0];
  });
}

/** Turns A, B, A, B: speaker_1, speaker_2, speaker_1, speaker_2. */
function assertTurns(steps: Parameters<typeof turnLabels>[0], what: string): void {
  assert.deepEqual(turnLabels(steps), ['speaker_1', 'speaker_2', 'speaker_1', 'speaker_2'], what);
}

/** The 0.6 s pauses between turns are digital silence. */
function assertPausesSilent(steps: Parameters<typeof turnLabels>[0], what: string): void {
  for (let i = 0; i + 1 < TURNS.length; i++) {
    const mid = (TURNS[i]!.end + TURNS[i + 1]!.start) / 2;
    const s = steps.find((x) => x.timestamp / 1000 <= mid && mid < x.timestamp / 1000 + PERIOD / 1000)!;
    assert.equal(s.results['speakers']!.result, 'silence', `${what}: pause ${i + 1}`);
  }
}

function assertSummary(summary: Record<string, number>, speakers: number, what: string): void {
  const keys = [...Array.from({ length: speakers }, (_, i) => `speaker_${i + 1}_fraction`), 'no_speech_fraction', 'silence_fraction'];
  assert.deepEqual(Object.keys(summary), keys, what);
  const total = Object.values(summary).reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(total - 1) < 1e-9, `${what}: fractions sum to ${total}`);
  for (let i = 1; i <= speakers; i++) assert.ok(summary[`speaker_${i}_fraction`]! > 0.3, `${what}: speaker_${i} talks ${summary[`speaker_${i}_fraction`]}`);
  assert.ok(summary['silence_fraction']! > 0.03, `${what}: the pauses are silence`);
}

/**
 * With `gender` beside `speakers`, the summary also gives each speaker's gender after the fractions
 * (the fractions still sum to 1): speaker_1 is the male espeak-ng voice, speaker_2 the female one
 * (test/fixtures/models/make.sh). A constant answer fails one of the two.
 */
function assertSpeakerGender(summary: Record<string, number>, what: string): void {
  const fractions = Object.entries(summary).filter(([k]) => k.endsWith('_fraction'));
  assert.ok(Math.abs(fractions.reduce((a, [, v]) => a + v, 0) - 1) < 1e-9, `${what}: fractions sum to 1`);
  const genders = Object.keys(summary).filter((k) => !k.endsWith('_fraction'));
  assert.deepEqual(genders, ['speaker_1_female_probability', 'speaker_1_male_probability', 'speaker_2_female_probability', 'speaker_2_male_probability'], what);
  for (const n of [1, 2]) assert.ok(Math.abs(summary[`speaker_${n}_female_probability`]! + summary[`speaker_${n}_male_probability`]! - 1) < 1e-9, `${what}: speaker_${n}'s sum to 1`);
  assert.ok(summary['speaker_1_male_probability']! > 0.5, `${what}: speaker_1 is the male voice: ${JSON.stringify(summary)}`);
  assert.ok(summary['speaker_2_female_probability']! > 0.5, `${what}: speaker_2 is the female voice: ${JSON.stringify(summary)}`);
}

/** Transitions are the turns: speaker segments alternate 1, 2, 1, 2 (with silences between and inside turns). */
function assertTransitions(segments: readonly { result: string; timestamp_start: number; timestamp_end: number }[], what: string): void {
  // the speaker segments of at least 1 s, runs of the same speaker (across a pause inside a turn) as one
  const speakersInOrder = segments
    .filter((s) => s.result.startsWith('speaker_') && s.timestamp_end - s.timestamp_start >= 1000)
    .map((s) => s.result)
    .filter((l, i, all) => i === 0 || all[i - 1] !== l);
  assert.deepEqual(speakersInOrder, ['speaker_1', 'speaker_2', 'speaker_1', 'speaker_2'], `${what}: ${JSON.stringify(segments.map((s) => [s.timestamp_start, s.result]))}`);
}

after(async () => {
  await closeSharedEngines();
});

describe('speakers over REST (file jobs)', () => {
  const dir = tempDir();
  let server: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    server = await startServer(dir.path);
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  async function job(file: string, query: string): Promise<ChannelResult> {
    const res = await createJob(server, KEY_A, { query, audio: fs.readFileSync(file), contentType: 'audio/flac' });
    assert.equal(res.status, 201, await res.clone().text());
    const { job_id } = (await res.json()) as { job_id: string };
    const done = await waitForJob(server, KEY_A, job_id, undefined, 60_000);
    assert.equal(done.status, 'succeeded', JSON.stringify(done));
    const r = await api(server, KEY_A)(`/file-processing/jobs/${job_id}/results`);
    return ((await r.json()) as { result: { channels: Record<string, ChannelResult> } }).result.channels['0']!;
  }

  for (const [name, file] of [['clean', CLEAN], ['G.711 phone line', PHONE]] as const) {
    it(`${name}, num_speakers=2: the turns, the pauses, the summary keys and the transitions`, async () => {
      const ch = await job(file, `models=speakers&output_period=${PERIOD}&num_speakers=2&include_summary=true&include_transitions=true&include_raw_values=true`);
      assertTurns(ch.time_series, name);
      assertPausesSilent(ch.time_series, name);
      assertSummary(ch.summary!['speakers']!, 2, name);
      assertTransitions(ch.transitions!['speakers']!, name);
      const labels = new Set(ch.time_series.map((s) => s.results['speakers']!.result));
      for (const l of labels) assert.ok(['speaker_1', 'speaker_2', 'no_speech', 'silence'].includes(l), l);
      // raw values: one probability per speaker found
      const speech = ch.time_series.find((s) => s.results['speakers']!.result === 'speaker_2')!;
      assert.deepEqual(Object.keys(speech.raw!['speakers']!), ['speaker_1', 'speaker_2']);
      assert.ok(speech.raw!['speakers']!['speaker_2']! > speech.raw!['speakers']!['speaker_1']!);
      // the job record keeps the count asked for
      const rec = await (await api(server, KEY_A)('/file-processing/jobs?limit=1')).json() as { jobs?: { request: Record<string, unknown> }[] };
      if (rec.jobs?.[0]) assert.equal(rec.jobs[0].request['num_speakers'], 2);
    });
  }

  for (const [name, file] of [['clean', CLEAN], ['G.711 phone line', PHONE]] as const) {
    it(`${name}, with gender: each speaker's gender in the summary`, async () => {
      const ch = await job(file, `models=speakers,gender&output_period=${PERIOD}&num_speakers=2&include_summary=true`);
      assertTurns(ch.time_series, name);
      assertSpeakerGender(ch.summary!['speakers']!, name);
    });
  }

  it('num_speakers=1 puts every speech step on speaker_1', async () => {
    const ch = await job(CLEAN, `models=speakers&output_period=${PERIOD}&num_speakers=1&include_summary=true`);
    assert.deepEqual(Object.keys(ch.summary!['speakers']!), ['speaker_1_fraction', 'no_speech_fraction', 'silence_fraction']);
    assert.deepEqual(new Set(turnLabels(ch.time_series)), new Set(['speaker_1']));
  });

  it('rejects bad counts with 400 INVALID_PARAMETER naming the parameter', async () => {
    for (const [query, parameter] of [
      ['models=speakers&output_period=256&num_speakers=0', 'num_speakers'],
      ['models=speakers&output_period=256&max_speakers=21', 'max_speakers'],
      ['models=speakers&output_period=256&num_speakers=1.5', 'num_speakers'],
      ['models=speech&output_period=256&num_speakers=2', 'num_speakers'],
      ['models=speakers&output_period=256&num_speakers=3&max_speakers=2', 'num_speakers'],
    ] as const) {
      const res = await createJob(server, KEY_A, { query, audio: fs.readFileSync(CLEAN), contentType: 'audio/flac' });
      assert.equal(res.status, 400, query);
      const body = (await res.json()) as { code?: string; error?: { code?: string }; detail?: string; message?: string };
      assert.match(JSON.stringify(body), /INVALID_PARAMETER/, query);
      assert.match(JSON.stringify(body), new RegExp(parameter), query);
    }
  });

  it('GET /models describes the speakers model', async () => {
    const r = (await (await api(server, KEY_A)('/models')).json()) as { models: { name: string; labels: string[]; summary_keys: string[]; also_runs: string[] }[] };
    const m = r.models.find((x) => x.name === 'speakers')!;
    assert.ok(m.labels.includes('speaker_1') && m.labels.includes('no_speech') && m.labels.includes('silence'));
    assert.ok(m.summary_keys.includes('speaker_1_fraction') && m.summary_keys.includes('no_speech_fraction'));
    assert.deepEqual(m.also_runs, ['speech']);
  });
});

/** The stream steps' speaker numbers: each new number is the next one, in order of first appearance. */
function assertNumberedInOrder(steps: readonly TimeStepResult[], what: string): number {
  let seen = 0;
  for (const s of steps) {
    const m = /^speaker_(\d+)$/.exec(s.results['speakers']!.result);
    if (!m) continue;
    const n = Number(m[1]);
    assert.ok(n <= seen + 1, `${what}: speaker_${n} before speaker_${seen + 1}`);
    seen = Math.max(seen, n);
  }
  return seen;
}

describe('speakers over gRPC (live streams)', () => {
  let g: TestServer;
  before(async () => {
    g = await startGrpc();
  });
  after(async () => {
    await g.close();
  });

  // max_speakers 2: OnlineSpeakers capped at 2; num_speakers 2: the recent windows re-clustered (recluster.ts)
  for (const [name, file, count] of [
    ['clean', CLEAN, { max_speakers: 2 }],
    ['G.711 phone line', PHONE, { max_speakers: 2 }],
    ['clean, num_speakers 2', CLEAN, { num_speakers: 2 }],
    ['G.711 phone line, num_speakers 2', PHONE, { num_speakers: 2 }],
  ] as const) {
    it(`${name}: online numbering by first appearance, the turns and the pauses; summary lists the speakers found`, async () => {
      const pcm = s16Pcm(file);
      const rate = name.startsWith('clean') ? 16000 : 8000;
      const out = await streamPcm(
        g.client,
        { models: ['speakers'], output_period: PERIOD, sample_rate: rate, encoding: 'PCM_S16LE', include_summary: true, include_transitions: true, ...count },
        pcm,
        Array.from({ length: Math.ceil(pcm.length / 640) }, () => 640),
      );
      assert.equal(out.status.code, 0, out.status.details);
      const steps = out.steps.map((s) => ({ timestamp: Number(s.timestamp), results: Object.fromEntries(Object.entries(s.results ?? {}).map(([k, v]) => [k, { result: v.result!, confidence: v.confidence! }])) })) as TimeStepResult[];
      assert.equal(assertNumberedInOrder(steps, name), 2);
      assertTurns(steps, name);
      assertPausesSilent(steps, name);
      const summary = out.summary!.summary!.models['speakers']!.fractions;
      assertSummary(summary, 2, name);
    });
  }

  it('with gender, num_speakers 2: each speaker\'s gender in the stream summary', async () => {
    const pcm = s16Pcm(CLEAN);
    const out = await streamPcm(
      g.client,
      { models: ['speakers', 'gender'], output_period: PERIOD, sample_rate: 16000, encoding: 'PCM_S16LE', include_summary: true, num_speakers: 2 },
      pcm,
      Array.from({ length: Math.ceil(pcm.length / 640) }, () => 640),
    );
    assert.equal(out.status.code, 0, out.status.details);
    assertSpeakerGender(out.summary!.summary!.models['speakers']!.fractions, 'gRPC');
  });

  it('max_speakers out of range is INVALID_ARGUMENT naming config.max_speakers', async () => {
    const out = await streamPcm(g.client, { models: ['speakers'], output_period: 256, sample_rate: 16000, encoding: 'PCM_S16LE', max_speakers: 40 }, Buffer.alloc(3200));
    assert.equal(out.status.code, 3);
    assert.match(out.status.details, /config\.max_speakers/);
  });
});

describe('speakers over WebSocket (live streams)', () => {
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  before(async () => {
    app = await startStreamingApp();
  });
  after(async () => {
    await app.cleanup();
  });

  it('the turns, raw values of the speakers found so far, and transitions equal to the steps', async () => {
    const pcm = s16Pcm(CLEAN);
    const out = await wsStream(
      app.wsUrl,
      { models: 'speakers', output_period: String(PERIOD), sample_rate: '16000', encoding: 's16le', include_summary: 'true', include_transitions: 'true', include_raw_values: 'true', max_speakers: '2' },
      pcm,
      { chunks: Array.from({ length: Math.ceil(pcm.length / 3200) }, () => 3200) },
    );
    assert.equal(out.closeCode, 1000, JSON.stringify(out.error));
    const steps = out.steps as unknown as TimeStepResult[];
    assert.equal(assertNumberedInOrder(steps, 'ws'), 2);
    assertTurns(steps, 'ws');
    // raw values list the speakers found when the step was sent: speaker_1 alone in the first turn
    const first1 = steps.findIndex((s) => s.results['speakers']!.result === 'speaker_1');
    const first2 = steps.findIndex((s) => s.results['speakers']!.result === 'speaker_2');
    assert.deepEqual(Object.keys(steps[first1]!.raw!['speakers']!), ['speaker_1']);
    assert.deepEqual(Object.keys(steps[first2]!.raw!['speakers']!), ['speaker_1', 'speaker_2']);
    const summary = out.messages.find((m) => m.type === 'summary') as { summary: Record<string, Record<string, number>> };
    const transitions = out.messages.find((m) => m.type === 'transitions') as { transitions: Record<string, { result: string; timestamp_start: number; timestamp_end: number }[]> };
    assertSummary(summary.summary['speakers']!, 2, 'ws');
    assertTransitions(transitions.transitions['speakers']!, 'ws');
  });

  it('with gender, max_speakers 2: each speaker\'s gender in the summary', async () => {
    const pcm = s16Pcm(PHONE);
    const out = await wsStream(
      app.wsUrl,
      { models: 'speakers,gender', output_period: String(PERIOD), sample_rate: '8000', encoding: 's16le', include_summary: 'true', max_speakers: '2' },
      pcm,
      { chunks: Array.from({ length: Math.ceil(pcm.length / 1600) }, () => 1600) },
    );
    assert.equal(out.closeCode, 1000, JSON.stringify(out.error));
    const summary = out.messages.find((m) => m.type === 'summary') as { summary: Record<string, Record<string, number>> };
    assertSpeakerGender(summary.summary['speakers']!, 'ws, G.711');
  });

  it('num_speakers=0 is refused with INVALID_PARAMETER', async () => {
    const out = await wsStream(app.wsUrl, { models: 'speakers', output_period: '256', sample_rate: '16000', encoding: 's16le', num_speakers: 'x' }, Buffer.alloc(0));
    assert.notEqual(out.closeCode, 1000);
    assert.match(JSON.stringify(out.error), /num_speakers/);
  });
});
