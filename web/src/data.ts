/**
 * Pure helpers over the results envelope: segments per model, CSV of segments, formatting,
 * class colours.
 */
import type { ChannelResult, ResultsEnvelope, Segment } from './api.js';

/**
 * The segments of one model in one channel: the `transitions` when the job asked for them,
 * else collapsed from the time series the same way (docs/results.md "Transitions").
 */
export function segmentsOf(ch: ChannelResult, model: string, durationMs: number | null): Segment[] {
  const given = ch.transitions?.[model];
  if (given) return given;
  const ts = ch.time_series;
  const out: Segment[] = [];
  let confSum = 0;
  let n = 0;
  for (let i = 0; i < ts.length; i++) {
    const r = ts[i]!.results[model];
    if (!r) continue;
    const last = out[out.length - 1];
    if (last && last.result === r.result) {
      confSum += r.confidence;
      n++;
      last.confidence = Math.round((confSum / n) * 1e4) / 1e4;
    } else {
      if (last) last.timestamp_end = ts[i]!.timestamp;
      confSum = r.confidence;
      n = 1;
      out.push({ timestamp_start: ts[i]!.timestamp, timestamp_end: ts[i]!.timestamp, result: r.result, confidence: r.confidence });
    }
  }
  const last = out[out.length - 1];
  if (last) {
    const step = ts.length > 1 ? ts[1]!.timestamp - ts[0]!.timestamp : 0;
    const lastTs = ts[ts.length - 1]!.timestamp;
    last.timestamp_end = durationMs !== null && durationMs > lastTs ? Math.round(durationMs) : lastTs + Math.max(step, 1);
  }
  return out;
}

/** The models present in a channel, in the order of the first time step (the request order). */
export function modelsOf(ch: ChannelResult, requested: string[] = []): string[] {
  const seen = new Set<string>();
  for (const m of requested) seen.add(m);
  const first = ch.time_series[0];
  if (first) for (const m of Object.keys(first.results)) seen.add(m);
  for (const m of Object.keys(ch.transitions ?? {})) seen.add(m);
  for (const m of Object.keys(ch.summary ?? {})) seen.add(m);
  return [...seen].filter(
    (m) => (first && m in first.results) || (ch.transitions && m in ch.transitions) || (ch.summary && m in ch.summary),
  );
}

/** End of the channel's audio in ms: the header duration, else the last segment end, else the last step's end. */
export function channelEndMs(ch: ChannelResult, durationSec: number | null): number {
  let end = durationSec !== null ? durationSec * 1000 : 0;
  for (const segs of Object.values(ch.transitions ?? {})) for (const s of segs) end = Math.max(end, s.timestamp_end);
  const ts = ch.time_series;
  if (end === 0 && ts.length) {
    const step = ts.length > 1 ? ts[1]!.timestamp - ts[0]!.timestamp : 64;
    end = ts[ts.length - 1]!.timestamp + step;
  }
  return Math.max(end, 1);
}

const csvCell = (v: string | number): string => {
  const s = String(v);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** CSV of every segment: one row per channel, model and segment (RFC 4180, CRLF line ends). */
export function segmentsCsv(env: ResultsEnvelope, durationSec: number | null): string {
  const rows: Array<Array<string | number>> = [['job_id', 'channel', 'model', 'timestamp_start', 'timestamp_end', 'start_sec', 'end_sec', 'result', 'confidence']];
  for (const [chId, ch] of Object.entries(env.result.channels)) {
    for (const model of modelsOf(ch)) {
      for (const s of segmentsOf(ch, model, durationSec === null ? null : durationSec * 1000)) {
        rows.push([env.job_id, chId, model, s.timestamp_start, s.timestamp_end, (s.timestamp_start / 1000).toFixed(3), (s.timestamp_end / 1000).toFixed(3), s.result, s.confidence]);
      }
    }
  }
  return rows.map((r) => r.map(csvCell).join(',')).join('\r\n') + '\r\n';
}

/** 83.5 s -> "1:23.5"; 7.42 -> "7.42 s". */
export function formatTime(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(2)} s`;
  const m = Math.floor(s / 60);
  const rest = s - m * 60;
  if (m < 60) return `${m}:${rest.toFixed(1).padStart(4, '0')}`;
  const h = Math.floor(m / 60);
  return `${h}:${String(m % 60).padStart(2, '0')}:${rest.toFixed(0).padStart(2, '0')}`;
}

export const formatPercent = (f: number): string => `${(f * 100).toFixed(2)} %`;

export function formatBytes(n: number | null): string {
  if (n === null) return '';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** A fixed colour per class label (the same in every lane and bar), chosen for contrast with dark text. */
const CLASS_COLOURS: Record<string, string> = {
  speech: '#4caf7a',
  music: '#a58bdc',
  other: '#e0b450',
  silence: '#d7dbe0',
  no_speech: '#b7bfc9',
  high: '#ef7d6b',
  low: '#74a7e8',
  neutral: '#e8cf6a',
  male: '#5cc2c9',
  female: '#e88bbd',
  unknown: '#c7a27a',
  happy: '#f2a65a',
  irritated: '#d9534f',
  tired: '#8c9bd6',
};

export function classColour(label: string): string {
  const n = speakerNumber(label);
  if (n !== null) return speakerStyle(n).colour;
  const known = CLASS_COLOURS[label];
  if (known) return known;
  let h = 0;
  for (const c of label) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h} 55% 70%)`;
}

/** The label of a summary key: "speech_fraction" -> "speech". */
export const fractionLabel = (key: string): string => key.replace(/_fraction$/, '');

// ---------- speakers (the speaker map: speaker_1, speaker_2, ... per channel) ----------

/** The model whose labels are speakers, drawn as one lane per speaker. */
export const SPEAKERS_MODEL = 'speakers';

/** 3 for "speaker_3", null for any other label (no_speech, silence, ...). */
export function speakerNumber(label: string): number | null {
  const m = /^speaker_([1-9]\d*)$/.exec(label);
  return m ? Number(m[1]) : null;
}

/**
 * The Okabe-Ito palette (distinguishable with the common colour-vision deficiencies), each with
 * the text colour that keeps a contrast of at least 4.5:1 on it.
 */
const SPEAKER_PALETTE: ReadonlyArray<{ colour: string; text: string }> = [
  { colour: '#e69f00', text: '#111111' }, // orange
  { colour: '#56b4e9', text: '#111111' }, // sky blue
  { colour: '#009e73', text: '#111111' }, // bluish green
  { colour: '#f0e442', text: '#111111' }, // yellow
  { colour: '#0072b2', text: '#ffffff' }, // blue
  { colour: '#d55e00', text: '#111111' }, // vermillion
  { colour: '#cc79a7', text: '#111111' }, // reddish purple
  { colour: '#3d3d3d', text: '#ffffff' }, // dark grey
];

/** Patterns laid over the colour: none, diagonal stripes, the other diagonal. */
const SPEAKER_PATTERNS: readonly string[] = [
  'none',
  'repeating-linear-gradient(45deg, rgba(255,255,255,0.38) 0 3px, transparent 3px 8px)',
  'repeating-linear-gradient(-45deg, rgba(0,0,0,0.22) 0 2px, transparent 2px 7px)',
];

export interface SpeakerStyle {
  /** The speaker's colour (bars, swatches, curves, summary). */
  colour: string;
  /** The colour of text on it (the speaker's number). */
  text: string;
  /** A CSS background-image over the colour ('none' for the first of each colour). */
  pattern: string;
}

/**
 * The stable look of speaker n (1-based): colour by n in an 8-colour cycle, pattern by n in a
 * 3-pattern cycle, so speakers 1..24 all differ in colour or pattern; the number is written in
 * bars wide enough for it.
 */
export function speakerStyle(n: number): SpeakerStyle {
  const i = Math.max(0, Math.floor(n) - 1);
  const c = SPEAKER_PALETTE[i % SPEAKER_PALETTE.length]!;
  return { colour: c.colour, text: c.text, pattern: SPEAKER_PATTERNS[i % SPEAKER_PATTERNS.length]! };
}

/** Paints an element (bar, swatch) in a label's look: a speaker's colour and pattern, else the class colour. */
export function paintLabel(e: HTMLElement, label: string): void {
  const n = speakerNumber(label);
  if (n === null) {
    e.style.background = classColour(label);
    return;
  }
  const st = speakerStyle(n);
  e.style.backgroundColor = st.colour;
  e.style.backgroundImage = st.pattern;
  e.style.color = st.text;
}

/** The speaker labels in a list of labels, in speaker order (speaker_2 before speaker_10). */
export function speakerLabels(labels: Iterable<string>): string[] {
  const out = [...new Set([...labels].filter((l) => speakerNumber(l) !== null))];
  return out.sort((a, b) => speakerNumber(a)! - speakerNumber(b)!);
}
