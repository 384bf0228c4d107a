/**
 * Provisional results (docs/streaming.md): on a real server with real models and real audio,
 * paced like a live source (20 ms chunks with short sleeps). No timing is asserted: only the
 * order and presence of provisional (final: false) and final messages, that results=final gives
 * exactly the finals (the messages of earlier versions), and the validation of `results`.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { createClient, openAnalyzeStream } from '../../src/grpc/client';
import { ModelRegistry } from '../../src/inference';
import type { StepResultMsg, StreamConfigMsg } from '../../src/grpc/proto';
import { KEY_A, splitProvisional, startStreamingApp, wsStream } from '../websocket/helpers';
import { errorCodeOf, splitProvisional as splitGrpc } from '../grpc/helpers';

const MODELS_DIR = path.join(__dirname, '..', '..', '..', 'models');
const FIXTURE = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'demo.flac');
/** Two espeak-ng voices taking turns (test/fixtures/models/make.sh): A 0-4.38 s, B 4.98-10.01 s, ... */
const TWO_VOICES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures', 'models', 'two-voices.flac');
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The first `seconds` of demo.flac as 16 kHz mono s16le. */
function demoPcm(seconds: number, file = FIXTURE): Buffer {
  return execFileSync('ffmpeg', ['-v', 'error', '-i', file, '-t', String(seconds), '-f', 's16le', '-ac', '1', '-ar', '16000', '-acodec', 'pcm_s16le', '-'], { maxBuffer: 1 << 26 });
}

/** 20 ms chunks (640 bytes), each followed by a short sleep: close to real time. */
async function paced(pcm: Buffer, send: (b: Buffer) => Promise<void> | void): Promise<void> {
  for (let off = 0; off < pcm.length; off += 640) {
    await send(pcm.subarray(off, off + 640));
    await sleep(15);
  }
}

/** A WebSocket stream paced in real time; every message in arrival order. */
async function wsPaced(wsUrl: string, query: Record<string, string>, pcm: Buffer): Promise<Array<Record<string, unknown>>> {
  const ws = new WebSocket(`${wsUrl}/stream?${new URLSearchParams(query)}`, { headers: { 'x-api-key': KEY_A } });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString('utf8')) as Record<string, unknown>));
  const closed = new Promise<number>((resolve) => ws.on('close', (c) => resolve(c)));
  await new Promise<void>((resolve) => ws.once('open', () => resolve()));
  await paced(pcm, (b) => new Promise<void>((resolve) => ws.send(b, { binary: true }, () => resolve())));
  ws.send(JSON.stringify({ type: 'end' }));
  assert.equal(await closed, 1000);
  return messages;
}

/** Index of each step's provisional and final message in `messages` (WebSocket JSON). */
function positions(messages: Array<Record<string, unknown>>): Map<number, { prov?: number; final?: number }> {
  const at = new Map<number, { prov?: number; final?: number }>();
  messages.forEach((m, i) => {
    if (m.type !== undefined) return;
    const e = at.get(m.timestamp as number) ?? {};
    if (m.final === true) e.final = i;
    else e.prov = i;
    at.set(m.timestamp as number, e);
  });
  return at;
}

/** 1.5 s of digital silence, 1 s of a steady 440 Hz tone (mostly not speech, not silent), then 2.5 s of speech. */
function skipAudio(speech: Buffer): Buffer {
  const tone = Buffer.alloc(16000 * 2);
  for (let i = 0; i < 16000; i++) tone.writeInt16LE(Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / 16000)), i * 2);
  return Buffer.concat([Buffer.alloc(16000 * 3), tone, speech.subarray(0, 16000 * 2 * 2.5)]);
}

/**
 * Streams `audio` twice, with raw values (every provisional answer shows, so every one is computed) and without; the
 * windows each named graph ran in each, and checks that both sent the same provisional messages (raw values left out)
 * wherever both sent a step's messages, over silence, no_speech and speech.
 */
async function skippedCalls(app: Awaited<ReturnType<typeof startStreamingApp>>, q: Record<string, string>, audio: Buffer, graphsOf: Record<string, string>): Promise<{ computed: Record<string, number>; skipping: Record<string, number> }> {
  const graphs = (): Record<string, { windows: number }> => app.hub!.engine.pool.stats.byGraph;
  const count = (before: Record<string, { windows: number }>): Record<string, number> =>
    Object.fromEntries(Object.entries(graphsOf).map(([k, g]) => [k, (graphs()[g]?.windows ?? 0) - (before[g]?.windows ?? 0)]));
  const b0 = graphs();
  const withRaw = splitProvisional(await wsPaced(app.wsUrl, { ...q, include_raw_values: 'true' }, audio)).provisional;
  const computed = count(b0);
  const b1 = graphs();
  const plain = splitProvisional(await wsPaced(app.wsUrl, q, audio)).provisional;
  const skipping = count(b1);
  const byStep = (msgs: typeof plain): Map<number, string[]> => {
    const m = new Map<number, string[]>();
    for (const p of msgs) m.set(p.timestamp, [...(m.get(p.timestamp) ?? []), JSON.stringify(p.results)]);
    return m;
  };
  const a = byStep(withRaw);
  let compared = 0;
  const labels = new Set<string>();
  for (const [t, msgs] of byStep(plain)) {
    const other = a.get(t);
    if (!other || other.length !== msgs.length) continue;
    assert.deepEqual(msgs, other, `step ${t}`);
    compared++;
    for (const m of msgs) for (const r of Object.values(JSON.parse(m) as Record<string, { result: string }>)) labels.add(r.result);
  }
  assert.ok(compared > 0.8 * (audio.length / 2 / 1024), `compared ${compared} steps`);
  for (const l of ['silence', 'no_speech', 'speech']) assert.ok(labels.has(l), `a compared step labelled ${l}: ${[...labels].join(', ')}`);
  return { computed, skipping };
}

describe('provisional results', () => {
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  let pcm: Buffer;
  before(async () => {
    app = await startStreamingApp();
    pcm = demoPcm(4);
  });
  after(async () => app?.cleanup());

  it('WebSocket, paced in real time: provisional results come before their finals, finals all present and in order', async () => {
    const messages = await wsPaced(app.wsUrl, { models: 'speech', output_period: '64', sample_rate: '16000', include_summary: 'true' }, pcm);
    const { finals, provisional } = splitProvisional(messages); // order checks: see the helper
    const steps = finals.filter((m) => m.type === undefined);
    assert.equal(steps.length, Math.ceil(pcm.length / 2 / 1024));
    assert.ok(provisional.length > 0, 'no provisional result at all');
    const at = positions(messages);
    for (const [t, e] of at) {
      assert.ok(e.final !== undefined, `step ${t} has no final`);
      if (e.prov !== undefined) assert.ok(e.prov < e.final!, `provisional of ${t} after its final`);
    }
    for (const p of provisional) assert.deepEqual(Object.keys(p.results), ['speech']);
    // the summary uses finals only: one per step
    const summary = finals.find((m) => m.type === 'summary') as { steps: number } | undefined;
    assert.equal(summary?.steps, steps.length);
  });

  it('WebSocket, several models (gating): a provisional message carries every requested model', async () => {
    const messages = await wsPaced(app.wsUrl, { models: 'gender,arousal', output_period: '128', sample_rate: '16000' }, pcm.subarray(0, 16000 * 2 * 3));
    const { provisional } = splitProvisional(messages);
    assert.ok(provisional.length > 0, 'no provisional result at all');
    for (const p of provisional) assert.deepEqual(Object.keys(p.results), ['gender', 'arousal']);
  });

  it('WebSocket, speech and gender: speech answers alone first, then a message with both (tiers)', async () => {
    const messages = await wsPaced(app.wsUrl, { models: 'speech,gender', output_period: '64', sample_rate: '16000' }, pcm.subarray(0, 16000 * 2 * 3));
    const { provisional } = splitProvisional(messages); // per-model order and supersets: see the helper
    const byStep = new Map<number, string[][]>();
    for (const p of provisional) byStep.set(p.timestamp, [...(byStep.get(p.timestamp) ?? []), Object.keys(p.results)]);
    const both = [...byStep.values()].filter((kinds) => kinds.some((k) => k.length === 2));
    assert.ok(both.length > 0, 'no provisional gender at all');
    for (const kinds of byStep.values()) {
      assert.deepEqual(kinds[0], ['speech'], 'the first provisional of a step holds speech alone');
      if (kinds.length > 1) assert.deepEqual(kinds.slice(1), [['speech', 'gender']]);
    }
  });

  it('emotions answers with gender (both from causal heads fed a call every 2 steps): {speech}, then {speech, gender, emotions}', async () => {
    const messages = await wsPaced(app.wsUrl, { models: 'speech,gender,emotions', output_period: '64', sample_rate: '16000' }, pcm.subarray(0, 16000 * 2 * 3));
    const { provisional } = splitProvisional(messages);
    const byStep = new Map<number, string[][]>();
    for (const p of provisional) byStep.set(p.timestamp, [...(byStep.get(p.timestamp) ?? []), Object.keys(p.results)]);
    assert.ok([...byStep.values()].some((kinds) => kinds.length === 2), 'no step with both provisional messages');
    for (const kinds of byStep.values()) assert.deepEqual(kinds, [['speech'], ['speech', 'gender', 'emotions']].slice(0, kinds.length));
  });

  it('output period 512 ms: speech (its causal head, no lookahead) answers first, then gender (its head hears 128 ms more): two messages per step', async () => {
    // per output step of 8 steps: speech's answer once the step's last step is in, gender's two steps later (with the
    // window plan of sessions 20-48, gender had no lookahead and both came in one message)
    const messages = await wsPaced(app.wsUrl, { models: 'speech,gender', output_period: '512', sample_rate: '16000' }, pcm);
    const { finals, provisional } = splitProvisional(messages);
    assert.equal(finals.filter((m) => m.type === undefined).length, Math.ceil(pcm.length / 2 / 8192));
    const byStep = new Map<number, string[][]>();
    for (const p of provisional) byStep.set(p.timestamp, [...(byStep.get(p.timestamp) ?? []), Object.keys(p.results)]);
    assert.ok(byStep.size > 0.5 * finals.length, `${byStep.size} steps with a provisional message`);
    assert.ok([...byStep.values()].some((kinds) => kinds.length === 2), 'no step with both messages');
    for (const kinds of byStep.values()) assert.deepEqual(kinds, [['speech'], ['speech', 'gender']].slice(0, kinds.length));
  });

  it('no provisional model call where its answer cannot show (silence): the same messages; speech, gender and emotions from their causal heads', async () => {
    const { computed, skipping } = await skippedCalls(app, { models: 'speech,gender,emotions', output_period: '64', sample_rate: '16000' }, skipAudio(pcm), {
      speech: 'speech/model.onnx',
      speechHead: 'speech/provisional.onnx',
      gender: 'gender/model.onnx',
      genderHead: 'gender/provisional.onnx',
      emotions: 'emotions/model.onnx',
      emotionsHead: 'emotions/provisional.onnx',
    });
    // the heads are stateful graphs: every step is fed, none re-run in a window, so the whole-file networks run only
    // for the finals' last steps
    for (const head of ['speechHead', 'genderHead', 'emotionsHead']) assert.ok(computed[head]! > 0 && skipping[head]! > 0, `${head} ran ${computed[head]} / ${skipping[head]} times`);
    for (const net of ['speech', 'gender', 'emotions']) assert.ok(computed[net]! <= 2 && skipping[net]! <= 2, `${net} windows ${computed[net]} / ${skipping[net]}`);
  });

  it('speakers: the speaker of the latest window ending by the step plus the manifest\'s lookahead, in the last tier (speaker_1 at confidence 0 before the first window); the finals as before', async () => {
    const audio = demoPcm(8.5, TWO_VOICES);
    const q = { models: 'speech,speakers', output_period: '64', sample_rate: '16000', max_speakers: '2' };
    const messages = await wsPaced(app.wsUrl, q, audio);
    const { finals, provisional } = splitProvisional(messages); // order checks: see the helper
    assert.equal(finals.filter((m) => m.type === undefined).length, Math.ceil(audio.length / 2 / 1024));
    const byStep = new Map<number, string[][]>();
    for (const p of provisional) byStep.set(p.timestamp, [...(byStep.get(p.timestamp) ?? []), Object.keys(p.results)]);
    for (const kinds of byStep.values()) assert.deepEqual(kinds, [['speech'], ['speech', 'speakers']].slice(0, kinds.length));
    const spoken = provisional.filter((p) => p.results['speakers']);
    // a step s takes the latest window ending by s + L: before the first window's last step (24) less L, none is known,
    // so speaker_1 at confidence 0
    const lookahead = ModelRegistry.loadSync().get('speakers').speakerMap!.provisionalLookaheadSteps;
    const early = spoken.filter((p) => p.timestamp < (24 - lookahead) * 64 && p.results['speakers']!.result.startsWith('speaker_'));
    assert.ok(early.length > 10, `${early.length} early provisional speakers`);
    for (const p of early) assert.deepEqual(p.results['speakers'], { result: 'speaker_1', confidence: 0 }, `step ${p.timestamp}`);
    // and their finals name speaker_1 too (the first voice is always speaker_1), with the windows' confidence
    // (where the final hears a voice too: a provisional speech label may differ from its final, models/speech/provisional.json)
    const finalOf = (t: number): { result: string } => (finals.find((f) => f.timestamp === t)!.results as Record<string, { result: string }>)['speakers']!;
    const voiced = early.filter((p) => finalOf(p.timestamp).result.startsWith('speaker_'));
    assert.ok(voiced.length > 0.8 * early.length, `${voiced.length} of ${early.length} early provisional speakers voiced in the finals`);
    for (const p of voiced) assert.equal(finalOf(p.timestamp).result, 'speaker_1', `final of step ${p.timestamp}`);
    // voice A's turn is speaker_1; once a window lies inside voice B's turn (from ~7.0 s), speaker_2
    const major = (from: number, to: number): string => {
      const counts = new Map<string, number>();
      for (const p of spoken) if (p.timestamp >= from && p.timestamp < to) counts.set(p.results['speakers']!.result, (counts.get(p.results['speakers']!.result) ?? 0) + 1);
      return [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'none';
    };
    assert.equal(major(2000, 4300), 'speaker_1');
    assert.equal(major(7200, 8400), 'speaker_2');
    // the same finals as a stream that asks for finals only
    const finalOnly = await wsStream(app.wsUrl, { ...q, results: 'final' }, audio);
    assert.deepEqual(finalOnly.messages.slice(1), finals.slice(1));
  });

  it('results=final: no provisional message, the same finals as results=all', async () => {
    const q = { models: 'speech,gender', output_period: '256', sample_rate: '16000', include_raw_values: 'true', include_transitions: 'true' };
    const all = await wsPaced(app.wsUrl, q, pcm.subarray(0, 16000 * 2 * 2));
    const finalOnly = await wsStream(app.wsUrl, { ...q, results: 'final' }, pcm.subarray(0, 16000 * 2 * 2));
    assert.equal(finalOnly.closeCode, 1000);
    assert.equal(finalOnly.provisional.length, 0);
    assert.deepEqual(finalOnly.messages.slice(1), splitProvisional(all).finals.slice(1)); // after "started" (its id differs)
  });

  it('gRPC, paced in real time: provisional (final false) before final (true), in order; RESULTS_MODE_FINAL has none', async () => {
    const client = createClient(`127.0.0.1:${app.grpcPort}`);
    try {
      const cfg: StreamConfigMsg = { models: ['speech'], output_period: 64, sample_rate: 16000, encoding: 'PCM_S16LE' };
      const run = async (c: StreamConfigMsg, pace: boolean): Promise<StepResultMsg[]> => {
        const h = openAnalyzeStream(client, KEY_A, c);
        const got: StepResultMsg[] = [];
        h.call.on('data', (m: StepResultMsg) => got.push(m));
        if (pace) await paced(pcm.subarray(0, 16000 * 2 * 2), (b) => h.send(b));
        else await h.send(pcm.subarray(0, 16000 * 2 * 2));
        h.end();
        const st = await h.status;
        assert.equal(st.code, 0, st.details);
        return got;
      };
      const all = await run(cfg, true);
      const { steps, provisional } = splitGrpc(all);
      assert.equal(steps.length, 32);
      assert.ok(provisional.length > 0, 'no provisional result at all');
      const firstFinal = new Map<number, number>();
      all.forEach((m, i) => m.final === true && firstFinal.set(Number(m.timestamp), i));
      all.forEach((m, i) => {
        if (m.final !== true) assert.ok(i < firstFinal.get(Number(m.timestamp))!, `provisional of ${m.timestamp} after its final`);
      });
      const finals = await run({ ...cfg, results: 'RESULTS_MODE_FINAL' }, false);
      assert.ok(finals.every((m) => m.final === true));
      assert.deepEqual(finals.map((m) => m.results), steps.map((m) => m.results));
    } finally {
      client.close();
    }
  });

  it('an invalid results value: INVALID_PARAMETER (WebSocket), INVALID_ARGUMENT (gRPC)', async () => {
    const ws = await wsStream(app.wsUrl, { models: 'speech', output_period: '64', sample_rate: '16000', results: 'some' });
    assert.equal(ws.error?.code, 'INVALID_PARAMETER');
    assert.match(ws.error!.message, /results "some" is not supported: use all or final/);
    const client = createClient(`127.0.0.1:${app.grpcPort}`);
    try {
      const h = openAnalyzeStream(client, KEY_A, { models: ['speech'], output_period: 64, sample_rate: 16000, encoding: 'PCM_S16LE', results: 7 });
      h.call.on('data', () => undefined);
      h.end();
      const st = await h.status;
      assert.equal(st.code, 3); // INVALID_ARGUMENT
      assert.equal(errorCodeOf(st), 'INVALID_ARGUMENT');
      assert.match(st.details, /config\.results 7 is not supported/);
    } finally {
      client.close();
    }
  });
});

describe('provisional results of a model without a causal head (its window plan)', () => {
  // every shipped model with provisional answers has a head since session 50; the window plan (src/inference/
  // provisional-runner.ts) still answers a model whose provisional.json has none: here emotions in a copy of models/
  let app: Awaited<ReturnType<typeof startStreamingApp>>;
  let modelsDir: string;
  before(async () => {
    modelsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-models-nohead-'));
    fs.cpSync(MODELS_DIR, modelsDir, { recursive: true });
    const file = path.join(modelsDir, 'emotions', 'provisional.json');
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    delete doc['head'];
    fs.writeFileSync(file, JSON.stringify(doc));
    app = await startStreamingApp({}, { modelsDir });
  });
  after(async () => {
    await app?.cleanup();
    fs.rmSync(modelsDir, { recursive: true, force: true });
  });

  it('no window call where its answer cannot show (silence, and no_speech): the same messages, fewer calls; emotions in a tier of its own, 4 steps after speech', async () => {
    const pcm = demoPcm(4);
    const q = { models: 'speech,emotions', output_period: '64', sample_rate: '16000' };
    const { computed, skipping } = await skippedCalls(app, q, skipAudio(pcm), { emotions: 'emotions/model.onnx', emotionsHead: 'emotions/provisional.onnx' });
    assert.equal(computed.emotionsHead, 0, 'no head without provisional.json head');
    // a window per 4 steps, skipped over the silent groups and the tone's where speech says so
    assert.ok(skipping.emotions! <= computed.emotions! - 5, `emotions provisional windows ${skipping.emotions} vs ${computed.emotions}`);
    const { provisional } = splitProvisional(await wsPaced(app.wsUrl, q, pcm.subarray(0, 16000 * 2 * 3)));
    const byStep = new Map<number, string[][]>();
    for (const p of provisional) byStep.set(p.timestamp, [...(byStep.get(p.timestamp) ?? []), Object.keys(p.results)]);
    assert.ok([...byStep.values()].some((kinds) => kinds.length === 2), 'no step with both provisional messages');
    for (const kinds of byStep.values()) assert.deepEqual(kinds, [['speech'], ['speech', 'emotions']].slice(0, kinds.length));
  });
});
