/**
 * `auris eval --conversations DIR`: the speaker map on recorded conversations with known turns
 * (training/diarization exports them: <name>.wav + <name>.json {speakers, condition, corpus, turns}),
 * each run as a file job and as a live stream paced by nothing (the same StreamSession as gRPC),
 * scored by diarization error rate (diarization.ts) and by whether the number of speakers is right.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyzeFile } from '../pipeline/analyze-file';
import { StreamSession } from '../pipeline/analyze-stream';
import { sharedEngine } from '../inference/engine';
import type { TimeStepResult } from '../analysis/postprocess';
import { diarizationError, turnsOfSteps, type DerResult, type Turn } from './diarization';

const MODEL = 'speakers';
const PERIOD_MS = 64;
/**
 * The references' rule (training/diarization/simulate.py PAUSE_S): a voice's pauses under 0.3 s
 * are part of its turn. The service labels each 64 ms step under the volume threshold `silence`,
 * pauses between words included, so the raw DER counts those as missed speech; the bridged DER
 * applies the references' rule to the service's turns too.
 */
const BRIDGE_S = 0.3;

export interface Conversation {
  name: string;
  wav: string;
  speakers: number;
  condition: string;
  corpus: string;
  turns: Turn[];
}

export interface ConversationScore {
  name: string;
  condition: string;
  corpus: string;
  speakers: number;
  durationS: number;
  file: DerResult;
  stream: DerResult;
  /** The same with the service's turns bridged across pauses under BRIDGE_S, as the references are. */
  fileBridged: DerResult;
  streamBridged: DerResult;
}

/** The conversations of a folder: every <name>.json with a `turns` list and a <name>.wav beside it. */
export function readConversations(dir: string): Conversation[] {
  const out: Conversation[] = [];
  for (const f of fs.readdirSync(dir).sort()) {
    if (!f.endsWith('.json')) continue;
    const wav = path.join(dir, f.replace(/\.json$/, '.wav'));
    if (!fs.existsSync(wav)) continue;
    const j = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Partial<Conversation>;
    if (!Array.isArray(j.turns)) continue;
    out.push({
      name: f.replace(/\.json$/, ''),
      wav,
      speakers: j.speakers ?? new Set(j.turns.map((t) => t.speaker)).size,
      condition: j.condition ?? '',
      corpus: j.corpus ?? '',
      turns: j.turns,
    });
  }
  return out;
}

/** Samples of a 16-bit PCM or 32-bit float WAV, as f32le bytes (channel 0), and its rate. */
export function wavAsF32(file: string): { bytes: Buffer; sampleRate: number; seconds: number } {
  const b = fs.readFileSync(file);
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${file}: not a WAV file`);
  let pos = 12;
  let format = 0;
  let channels = 1;
  let rate = 0;
  let bits = 0;
  while (pos + 8 <= b.length) {
    const id = b.toString('ascii', pos, pos + 4);
    const size = b.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ') {
      format = b.readUInt16LE(body);
      channels = b.readUInt16LE(body + 2);
      rate = b.readUInt32LE(body + 4);
      bits = b.readUInt16LE(body + 14);
    } else if (id === 'data') {
      const frames = Math.floor(Math.min(size, b.length - body) / ((bits / 8) * channels));
      const out = Buffer.alloc(frames * 4);
      for (let i = 0; i < frames; i++) {
        const at = body + i * (bits / 8) * channels;
        const v = format === 3 && bits === 32 ? b.readFloatLE(at) : bits === 16 ? b.readInt16LE(at) / 32768 : NaN;
        if (Number.isNaN(v)) throw new Error(`${file}: only 16-bit PCM or 32-bit float WAV`);
        out.writeFloatLE(v, i * 4);
      }
      return { bytes: out, sampleRate: rate, seconds: frames / rate };
    }
    pos = body + size + (size % 2);
  }
  throw new Error(`${file}: no data chunk`);
}

function labelsOf(steps: readonly TimeStepResult[]): string[] {
  return steps.map((s) => s.results[MODEL]!.result);
}

/** One conversation as a file job and as a stream. */
export async function scoreConversation(c: Conversation, counts: { numSpeakers?: number } = {}, modelsDir?: string): Promise<ConversationScore> {
  const audio = wavAsF32(c.wav);
  const request = { models: [MODEL], outputPeriodMs: PERIOD_MS, includeSummary: false, includeTransitions: false, includeRaw: false, ...counts };
  const engine = await sharedEngine(modelsDir !== undefined ? { modelsDir } : {});
  const fileRun = await analyzeFile({ path: c.wav }, request, { engine });
  const fileLabels = labelsOf(fileRun.channels['0']!.time_series);
  const steps: TimeStepResult[] = [];
  const session = new StreamSession(
    engine,
    { ...request, channel: 0, sampleRate: audio.sampleRate, encoding: 'f32le', channels: 1 },
    { onStep: (s) => steps.push(s), onError: () => undefined },
  );
  try {
    const chunk = 4 * 1024 * 4;
    for (let i = 0; i < audio.bytes.length; i += chunk) session.push(audio.bytes.subarray(i, i + chunk));
    await session.end();
  } finally {
    session.close();
  }
  const d = audio.seconds;
  const streamLabels = labelsOf(steps);
  const der = (labels: string[], bridgeS = 0): DerResult => diarizationError(c.turns, turnsOfSteps(labels, PERIOD_MS, d, bridgeS), d);
  return {
    name: c.name,
    condition: c.condition,
    corpus: c.corpus,
    speakers: c.speakers,
    durationS: d,
    file: der(fileLabels),
    stream: der(streamLabels),
    fileBridged: der(fileLabels, BRIDGE_S),
    streamBridged: der(streamLabels, BRIDGE_S),
  };
}

export interface GroupScore {
  group: string;
  conversations: number;
  /** Pooled DER (errors over the group's scored time). */
  fileDer: number;
  streamDer: number;
  /** Pooled DER with the service's turns bridged across pauses under 0.3 s, like the references. */
  fileBridgedDer: number;
  streamBridgedDer: number;
  /** The file jobs' missed speech, false alarm and confusion, shares of the scored time (raw). */
  fileParts: { missed: number; falseAlarm: number; confusion: number };
  /** Share of conversations whose number of speakers found is right. */
  fileCountRight: number;
  streamCountRight: number;
}

export function groupScores(scores: readonly ConversationScore[], keyOf: (s: ConversationScore) => string): GroupScore[] {
  const groups = new Map<string, ConversationScore[]>();
  for (const s of scores) groups.set(keyOf(s), [...(groups.get(keyOf(s)) ?? []), s]);
  type Mode = 'file' | 'stream' | 'fileBridged' | 'streamBridged';
  const share = (list: ConversationScore[], k: Mode, part: (r: DerResult) => number): number => {
    const tot = list.reduce((a, s) => a + s[k].scored, 0);
    return tot > 0 ? list.reduce((a, s) => a + part(s[k]), 0) / tot : 0;
  };
  const pooled = (list: ConversationScore[], k: Mode): number => share(list, k, (r) => r.missed + r.falseAlarm + r.confusion);
  const right = (list: ConversationScore[], k: 'file' | 'stream'): number => list.filter((s) => s[k].hypSpeakers === s.speakers).length / list.length;
  return [...groups.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : 1))
    .map(([group, list]) => ({
      group,
      conversations: list.length,
      fileDer: pooled(list, 'file'),
      streamDer: pooled(list, 'stream'),
      fileBridgedDer: pooled(list, 'fileBridged'),
      streamBridgedDer: pooled(list, 'streamBridged'),
      fileParts: { missed: share(list, 'file', (r) => r.missed), falseAlarm: share(list, 'file', (r) => r.falseAlarm), confusion: share(list, 'file', (r) => r.confusion) },
      fileCountRight: right(list, 'file'),
      streamCountRight: right(list, 'stream'),
    }));
}

export function formatGroups(title: string, groups: readonly GroupScore[]): string {
  const pc = (x: number): string => `${(100 * x).toFixed(1)}`.padStart(6);
  const lines = [title, `${'group'.padEnd(28)}   n  file DER  stream DER  file count ok  stream count ok  bridged: file  stream  file: missed  false alarm  confusion`];
  for (const g of groups) {
    const p = g.fileParts;
    lines.push(
      `${g.group.padEnd(28)} ${String(g.conversations).padStart(3)}  ${pc(g.fileDer)} %  ${pc(g.streamDer)} %    ${pc(g.fileCountRight)} %     ${pc(g.streamCountRight)} %` +
        `       ${pc(g.fileBridgedDer)} % ${pc(g.streamBridgedDer)} %  ${pc(p.missed)} %     ${pc(p.falseAlarm)} %   ${pc(p.confusion)} %`,
    );
  }
  return lines.join('\n');
}
