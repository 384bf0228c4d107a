/**
 * The result view of one channel: waveform (decoded in the browser), one colour-coded lane
 * per model from the segments (the speakers model: one lane per speaker found, with a legend of
 * their talk time), raw-probability curves when present, a time axis, and the summary
 * fractions as bars. Lanes are DOM elements positioned in percent, so they follow
 * the width; the canvases are redrawn on resize.
 */
import type { ChannelResult, Segment } from './api.js';
import { channelEndMs, classColour, formatPercent, formatTime, fractionLabel, modelsOf, paintLabel, segmentsOf, SPEAKERS_MODEL, speakerLabels, speakerNumber, speakerStyle } from './data.js';
import { createPlayer } from './playback.js';

export interface ChannelViewInput {
  jobId: string;
  channelId: string;
  channel: ChannelResult;
  requestedModels: string[];
  durationSec: number | null;
  /** Decoded samples of this channel (any sample rate), or null: no waveform. */
  samples: { data: Float32Array; sampleRate: number } | null;
  /** Why there is no waveform and no playback (shown instead of them). */
  waveformNote: string;
}

let uid = 0;

/** One hidden hint, shared by every lane: how to move between segments. */
function laneHintId(): string {
  const id = 'lane-keys-hint';
  if (!document.getElementById(id)) {
    const hint = el('p', { id, class: 'visually-hidden' }, 'Segments of one model in time order. Tab to a lane, then use the arrow keys, Home and End to move between its segments.');
    document.body.append(hint);
  }
  return id;
}
const nextId = (p: string): string => `${p}-${++uid}`;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

/** The shared tooltip element (one per page). */
function tooltip(): HTMLElement {
  let t = document.getElementById('tooltip');
  if (!t) {
    t = el('div', { id: 'tooltip', role: 'tooltip', class: 'tooltip' });
    t.hidden = true;
    document.body.append(t);
  }
  return t;
}

function showTooltip(lines: string[], x: number, y: number): void {
  const t = tooltip();
  t.replaceChildren(...lines.map((l, i) => el(i === 0 ? 'strong' : 'span', {}, l)));
  t.hidden = false;
  const w = t.offsetWidth;
  const h = t.offsetHeight;
  const left = Math.min(Math.max(4, x - w / 2), window.innerWidth - w - 4);
  const top = y - h - 10 < 4 ? y + 18 : y - h - 10;
  t.style.left = `${left + window.scrollX}px`;
  t.style.top = `${top + window.scrollY}px`;
}

export function hideTooltip(): void {
  const t = document.getElementById('tooltip');
  if (t) t.hidden = true;
}

const segmentText = (model: string, s: Segment): string =>
  `${model}: ${s.result}, ${formatTime(s.timestamp_start)} to ${formatTime(s.timestamp_end)}, confidence ${s.confidence.toFixed(4)}`;

/** Redraws a canvas at its CSS size times devicePixelRatio. */
function fitCanvas(canvas: HTMLCanvasElement): CanvasRenderingContext2D | null {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(canvas.clientWidth * dpr));
  const h = Math.max(1, Math.round(canvas.clientHeight * dpr));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  const ctx = canvas.getContext('2d');
  if (!ctx) return null;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, w, h);
  return ctx;
}

function drawWaveform(canvas: HTMLCanvasElement, samples: { data: Float32Array; sampleRate: number }, endMs: number): void {
  const ctx = fitCanvas(canvas);
  if (!ctx) return;
  const { width: w, height: h } = canvas;
  const mid = h / 2;
  ctx.fillStyle = getComputedStyle(canvas).getPropertyValue('--wave').trim() || '#3b6ea5';
  const total = (endMs / 1000) * samples.sampleRate; // samples spanned by the full width
  const data = samples.data;
  let peak = 0;
  for (let i = 0; i < data.length; i += 16) peak = Math.max(peak, Math.abs(data[i]!));
  const gain = peak > 0 && peak < 0.25 ? 0.25 / peak : 1; // quiet files still show a shape
  for (let x = 0; x < w; x++) {
    const a = Math.floor((x / w) * total);
    const b = Math.min(data.length, Math.max(a + 1, Math.floor(((x + 1) / w) * total)));
    if (a >= data.length) break;
    let min = 1;
    let max = -1;
    const stride = Math.max(1, Math.floor((b - a) / 512));
    for (let i = a; i < b; i += stride) {
      const v = data[i]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const y1 = mid - Math.min(1, max * gain) * mid * 0.95;
    const y2 = mid - Math.max(-1, min * gain) * mid * 0.95;
    ctx.fillRect(x, y1, 1, Math.max(1, y2 - y1));
  }
  ctx.fillStyle = 'rgba(0,0,0,0.25)';
  ctx.fillRect(0, Math.floor(mid), w, 1);
}

function drawCurves(canvas: HTMLCanvasElement, ch: ChannelResult, model: string, classes: string[], endMs: number): void {
  const ctx = fitCanvas(canvas);
  if (!ctx) return;
  const { width: w, height: h } = canvas;
  const dpr = window.devicePixelRatio || 1;
  ctx.strokeStyle = 'rgba(0,0,0,0.12)';
  ctx.lineWidth = 1;
  for (const f of [0.25, 0.5, 0.75]) {
    ctx.beginPath();
    ctx.moveTo(0, Math.round(h * f) + 0.5);
    ctx.lineTo(w, Math.round(h * f) + 0.5);
    ctx.stroke();
  }
  const ts = ch.time_series;
  const step = ts.length > 1 ? ts[1]!.timestamp - ts[0]!.timestamp : endMs;
  ctx.lineWidth = 1.5 * dpr;
  for (const cls of classes) {
    ctx.strokeStyle = classColour(cls);
    ctx.beginPath();
    let started = false;
    for (const t of ts) {
      const p = t.raw?.[model]?.[cls];
      if (p === undefined) continue;
      const x = ((t.timestamp + step / 2) / endMs) * w;
      const y = h - p * (h - 2 * dpr) - dpr;
      if (started) ctx.lineTo(x, y);
      else ctx.moveTo(x, y);
      started = true;
    }
    ctx.stroke();
  }
}

function niceTickMs(endMs: number, widthPx: number): number {
  const target = endMs / Math.max(2, Math.floor(widthPx / 90));
  const steps = [100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000, 300000, 600000, 900000, 1800000, 3600000];
  return steps.find((s) => s >= target) ?? 3600000;
}

function renderAxis(axis: HTMLElement, endMs: number): void {
  const tick = niceTickMs(endMs, axis.clientWidth || 800);
  const ticks: HTMLElement[] = [];
  for (let t = 0; t <= endMs + 1e-6; t += tick) {
    const s = el('span', { class: t / endMs > 0.97 ? 'tick end' : 'tick' }, formatTime(t));
    s.style.left = `${(t / endMs) * 100}%`;
    ticks.push(s);
  }
  axis.replaceChildren(...ticks);
}

/** Builds the view of one channel. Returns the element and a redraw function (resize). */
export function channelView(input: ChannelViewInput): { root: HTMLElement; redraw: () => void } {
  const { channel: ch, channelId } = input;
  const endMs = channelEndMs(ch, input.durationSec);
  const models = modelsOf(ch, input.requestedModels);
  const headingId = nextId('ch');
  const root = el('section', { class: 'channel', 'aria-labelledby': headingId, 'data-channel': channelId });
  root.append(el('h3', { id: headingId }, `Channel ${channelId}`));

  const grid = el('div', { class: 'tracks' });
  const redraws: Array<() => void> = [];
  addWaveformTrack(grid, input, endMs, redraws);
  grid.append(el('div', { class: 'track-label' }, 'Playback'));
  const playRow = el('div', { class: 'play-row' });
  grid.append(playRow);
  // One lane per model (per speaker for the speakers model), with its raw curves under it when present.
  let speakerSegs: Segment[] | null = null;
  for (const model of models) {
    const segs = segmentsOf(ch, model, input.durationSec === null ? null : input.durationSec * 1000);
    if (model === SPEAKERS_MODEL && speakerLabels(segs.map((s) => s.result)).length) {
      speakerSegs = segs;
      addSpeakerLanes(grid, ch, segs, endMs, redraws);
    } else addModelLane(grid, ch, model, segs, endMs);
    const rawClasses = rawClassesOf(ch, model);
    if (rawClasses.length) addCurveTrack(grid, ch, model, rawClasses, endMs, redraws);
  }
  addTimeAxis(grid, endMs, redraws);
  const host = withPointerCursor(grid);
  root.append(host);
  addPlayback(playRow, grid, host, input, endMs);

  if (speakerSegs) root.append(speakerLegend(ch, speakerSegs, endMs));
  const legend = labelLegend(ch, speakerSegs ? models.filter((m) => m !== SPEAKERS_MODEL) : models);
  if (legend) root.append(legend);
  if (ch.summary && Object.keys(ch.summary).length) root.append(summaryBox(ch.summary));

  const redraw = (): void => {
    for (const r of redraws) r();
  };
  return { root, redraw };
}

/** The play bar, and playback from a segment on click or Enter; or why there is none. */
function addPlayback(row: HTMLElement, grid: HTMLElement, host: HTMLElement, input: ChannelViewInput, endMs: number): void {
  if (!input.samples) {
    row.append(el('span', { class: 'note' }, input.waveformNote));
    return;
  }
  const player = createPlayer({ samples: input.samples, endMs, host, track: () => grid.querySelector<HTMLElement>('.lane') });
  row.append(player.bar);
  const segAt = (t: EventTarget | null): HTMLElement | null => (t instanceof Element ? t.closest<HTMLElement>('.seg') : null);
  grid.addEventListener('click', (ev) => {
    const seg = segAt(ev.target);
    if (seg) player.play(Number(seg.dataset.start));
  });
  grid.addEventListener('keydown', (ev) => {
    const seg = segAt(ev.target);
    if (seg && ev.key === 'Enter') player.play(Number(seg.dataset.start));
  });
}

/** A colour swatch (decorative: the label beside it carries the meaning). */
function swatch(label: string): HTMLElement {
  const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
  paintLabel(sw, label);
  return sw;
}

function addWaveformTrack(grid: HTMLElement, input: ChannelViewInput, endMs: number, redraws: Array<() => void>): void {
  const waveLabelId = nextId('wave');
  grid.append(el('div', { class: 'track-label', id: waveLabelId }, 'Waveform'));
  const waveTrack = el('div', { class: 'track wave-track' });
  if (input.samples) {
    const canvas = el('canvas', { class: 'waveform', role: 'img', 'aria-labelledby': waveLabelId, 'aria-describedby': `${waveLabelId}-d` });
    waveTrack.append(canvas, el('span', { id: `${waveLabelId}-d`, class: 'visually-hidden' }, `Waveform of channel ${input.channelId}, ${formatTime(endMs)}`));
    const samples = input.samples;
    redraws.push(() => drawWaveform(canvas, samples, endMs));
  } else {
    waveTrack.classList.add('no-wave');
    waveTrack.append(el('span', { class: 'note' }, input.waveformNote));
  }
  grid.append(waveTrack);
}

/** The lane of one model: its segments as a list, with keyboard moves and tooltips. */
function addModelLane(grid: HTMLElement, ch: ChannelResult, model: string, segs: Segment[], endMs: number): void {
  const labelId = nextId('lane');
  grid.append(el('div', { class: 'track-label', id: labelId }, model));
  const lane = el('div', {
    class: 'track lane',
    role: 'list',
    'aria-labelledby': labelId,
    'aria-describedby': laneHintId(),
    'data-model': model,
  });
  segs.forEach((s, i) => lane.append(segmentElement(model, s, i === 0, endMs)));
  addLaneKeys(lane);
  addLaneTooltips(lane, ch, model, segs, endMs);
  grid.append(lane);
}

/**
 * The speakers model: one lane per speaker found (speaker_1, speaker_2, ... in number order),
 * each with the segments where that speaker talks, in its colour and pattern with its number
 * written in bars wide enough; no_speech and silence are not drawn.
 */
function addSpeakerLanes(grid: HTMLElement, ch: ChannelResult, segs: Segment[], endMs: number, redraws: Array<() => void>): void {
  const lanes: HTMLElement[] = [];
  for (const label of speakerLabels(segs.map((s) => s.result))) {
    const own = segs.filter((s) => s.result === label);
    const labelId = nextId('lane');
    const name = el('div', { class: 'track-label speaker-label', id: labelId });
    name.append(swatch(label), el('span', {}, label));
    grid.append(name);
    const lane = el('div', {
      class: 'track lane speaker-lane',
      role: 'list',
      'aria-labelledby': labelId,
      'aria-describedby': laneHintId(),
      'data-model': SPEAKERS_MODEL,
      'data-speaker': label,
    });
    own.forEach((s, i) => lane.append(segmentElement(SPEAKERS_MODEL, s, i === 0, endMs)));
    addLaneKeys(lane);
    addLaneTooltips(lane, ch, SPEAKERS_MODEL, own, endMs, true);
    grid.append(lane);
    lanes.push(lane);
  }
  // The number only where it fits (the bars' widths follow the page's).
  redraws.push(() => {
    for (const lane of lanes) for (const seg of segmentsIn(lane)) seg.classList.toggle('narrow', seg.offsetWidth < 16);
  });
}

/** The speakers found, with their talk time: from the summary when the job has one, else from the segments. */
function speakerLegend(ch: ChannelResult, segs: Segment[], endMs: number): HTMLElement {
  const fractions = ch.summary?.[SPEAKERS_MODEL];
  let rows: Array<{ label: string; fraction: number }>;
  if (fractions) {
    const labels = speakerLabels(Object.keys(fractions).map(fractionLabel));
    rows = labels.map((label) => ({ label, fraction: fractions[`${label}_fraction`] ?? 0 }));
  } else {
    rows = speakerLabels(segs.map((s) => s.result)).map((label) => ({
      label,
      fraction: segs.filter((s) => s.result === label).reduce((t, s) => t + (s.timestamp_end - s.timestamp_start), 0) / endMs,
    }));
  }
  const legend = el('ul', { class: 'legend speaker-legend', 'aria-label': `Speakers: talk time ${fractions ? 'from the summary' : 'from the segments'}`, 'data-source': fractions ? 'summary' : 'segments' });
  for (const { label, fraction } of rows) {
    const li = el('li', { 'data-speaker': label, 'data-fraction': String(fraction) });
    li.append(swatch(label), el('span', { class: 'speaker-name' }, label), el('span', { class: 'talk' }, `${formatTime(fraction * endMs)} · ${formatPercent(fraction)}`));
    const gender = fractions ? speakerGender(fractions, label) : undefined;
    if (gender) {
      li.dataset['gender'] = gender.label;
      li.append(el('span', { class: 'speaker-gender', title: `${label}'s voice gender (the speaker's summary)` }, `${gender.label} ${formatPercent(gender.probability)}`));
    }
    legend.append(li);
  }
  return legend;
}

/** The likeliest class of a speaker's `<speaker>_<class>_probability` keys (given when gender ran beside speakers), if any. */
function speakerGender(summary: Record<string, number>, speaker: string): { label: string; probability: number } | undefined {
  let best: { label: string; probability: number } | undefined;
  for (const [key, value] of Object.entries(summary)) {
    const m = /^(speaker_\d+)_([a-z]+)_probability$/.exec(key);
    if (m && m[1] === speaker && (!best || value > best.probability)) best = { label: m[2]!, probability: value };
  }
  return best;
}

function segmentElement(model: string, s: Segment, first: boolean, endMs: number): HTMLElement {
  const seg = el('div', {
    class: 'seg',
    role: 'listitem',
    tabindex: first ? '0' : '-1',
    'data-label': s.result,
    'data-start': String(s.timestamp_start),
    'data-end': String(s.timestamp_end),
    'data-confidence': String(s.confidence),
    'aria-label': segmentText(model, s),
  });
  seg.style.left = `${(s.timestamp_start / endMs) * 100}%`;
  seg.style.width = `${(Math.max(0, s.timestamp_end - s.timestamp_start) / endMs) * 100}%`;
  paintLabel(seg, s.result);
  const n = speakerNumber(s.result);
  if (n === null) seg.append(el('span', { class: 'seg-text', 'aria-hidden': 'true' }, s.result));
  else seg.append(speakerNumberChip(n));
  return seg;
}

/** A speaker's number on a solid chip of its colour (readable over the pattern). */
export function speakerNumberChip(n: number): HTMLElement {
  const chip = el('span', { class: 'seg-text speaker-num', 'aria-hidden': 'true' }, String(n));
  const st = speakerStyle(n);
  chip.style.backgroundColor = st.colour;
  chip.style.color = st.text;
  return chip;
}

const segmentsIn = (lane: HTMLElement): HTMLElement[] => [...lane.querySelectorAll<HTMLElement>('.seg')];

/** Arrow keys, Home and End move the focus between a lane's segments (one tab stop per lane). */
function addLaneKeys(lane: HTMLElement): void {
  const focusSeg = (i: number): void => {
    const all = segmentsIn(lane);
    const target = all[Math.max(0, Math.min(all.length - 1, i))];
    if (!target) return;
    for (const s of all) s.tabIndex = -1;
    target.tabIndex = 0;
    target.focus();
  };
  lane.addEventListener('keydown', (ev) => {
    const cur = segmentsIn(lane).indexOf(ev.target as HTMLElement);
    if (cur < 0) return;
    const moves: Record<string, number> = { ArrowRight: cur + 1, ArrowDown: cur + 1, ArrowLeft: cur - 1, ArrowUp: cur - 1, Home: 0, End: segmentsIn(lane).length - 1 };
    const to = moves[ev.key];
    if (to === undefined) {
      if (ev.key === 'Escape') hideTooltip();
      return;
    }
    ev.preventDefault();
    focusSeg(to);
  });
}

/** The tooltip of the focused segment, or of the segment and step under the pointer (`sparse`: a lane with gaps, no tooltip in them). */
function addLaneTooltips(lane: HTMLElement, ch: ChannelResult, model: string, segs: Segment[], endMs: number, sparse = false): void {
  lane.addEventListener('focusin', (ev) => {
    const seg = ev.target as HTMLElement;
    if (!seg.classList.contains('seg')) return;
    const r = seg.getBoundingClientRect();
    const s = segs[segmentsIn(lane).indexOf(seg)];
    if (s) showTooltip(tooltipLines(model, s, null), r.left + r.width / 2, r.top);
  });
  lane.addEventListener('focusout', hideTooltip);
  lane.addEventListener('mousemove', (ev) => {
    const r = lane.getBoundingClientRect();
    const t = ((ev.clientX - r.left) / r.width) * endMs;
    const s = segs.find((x) => t >= x.timestamp_start && t < x.timestamp_end) ?? (sparse ? undefined : segs[segs.length - 1]);
    if (!s) hideTooltip();
    else showTooltip(tooltipLines(model, s, t, stepConfidence(ch, model, t)), ev.clientX, r.top);
  });
  lane.addEventListener('mouseleave', hideTooltip);
}

/** The raw-probability curves of one model, with a legend of their classes. */
function addCurveTrack(grid: HTMLElement, ch: ChannelResult, model: string, rawClasses: string[], endMs: number, redraws: Array<() => void>): void {
  const curveLabelId = nextId('curve');
  const label = el('div', { class: 'track-label sub', id: curveLabelId });
  label.append(el('span', {}, `${model} raw`));
  const legend = el('span', { class: 'curve-legend' });
  for (const c of rawClasses) {
    const item = el('span', { class: 'key' });
    item.append(swatch(c), document.createTextNode(c));
    legend.append(item);
  }
  label.append(legend);
  grid.append(label);
  const curveTrack = el('div', { class: 'track curve-track' });
  const canvas = el('canvas', {
    class: 'curve',
    role: 'img',
    'aria-labelledby': curveLabelId,
    'data-model': model,
  });
  canvas.setAttribute('aria-label', `Raw probabilities of ${model} over time: ${rawClasses.join(', ')}`);
  curveTrack.append(canvas);
  grid.append(curveTrack);
  redraws.push(() => drawCurves(canvas, ch, model, rawClasses, endMs));
}

function addTimeAxis(grid: HTMLElement, endMs: number, redraws: Array<() => void>): void {
  grid.append(el('div', { class: 'track-label axis-label' }, 'Time'));
  const axis = el('div', { class: 'axis', 'aria-hidden': 'true' });
  grid.append(axis);
  redraws.push(() => renderAxis(axis, endMs));
}

/** The tracks inside a host with a vertical cursor over every track at the pointer. */
function withPointerCursor(grid: HTMLElement): HTMLElement {
  const cursor = el('div', { class: 'cursor', 'aria-hidden': 'true' });
  cursor.hidden = true;
  const overlayHost = el('div', { class: 'tracks-host' });
  overlayHost.append(grid, cursor);
  grid.addEventListener('mousemove', (ev) => {
    const track = grid.querySelector<HTMLElement>('.track');
    if (!track) return;
    const r = track.getBoundingClientRect();
    const hr = overlayHost.getBoundingClientRect();
    if (ev.clientX < r.left || ev.clientX > r.right) {
      cursor.hidden = true;
      return;
    }
    cursor.hidden = false;
    cursor.style.left = `${ev.clientX - hr.left}px`;
  });
  grid.addEventListener('mouseleave', () => (cursor.hidden = true));
  return overlayHost;
}

/** Legend of the labels used in the lanes, or null when no lane has a segment. */
function labelLegend(ch: ChannelResult, models: string[]): HTMLElement | null {
  const used = new Set<string>();
  for (const m of models) for (const s of segmentsOf(ch, m, null)) used.add(s.result);
  if (!used.size) return null;
  const legend = el('ul', { class: 'legend', 'aria-label': 'Label colours' });
  for (const label of used) {
    const li = el('li');
    li.append(swatch(label), document.createTextNode(label));
    legend.append(li);
  }
  // The gender lane's no_speech is the gender summary's other_fraction (docs/results.md).
  if (models.includes('gender') && segmentsOf(ch, 'gender', null).some((s) => s.result === 'no_speech')) {
    legend.append(el('li', { class: 'legend-note' }, GENDER_NO_SPEECH_NOTE));
  }
  return legend;
}

export const GENDER_NO_SPEECH_NOTE = 'gender no_speech: sound but no voice; the gender summary counts it as other';

/** The summary fractions: per model, a stacked bar and a list with a meter per fraction. */
function summaryBox(summary: NonNullable<ChannelResult['summary']>): HTMLElement {
  const sumId = nextId('sum');
  const box = el('div', { class: 'summary', role: 'group', 'aria-labelledby': sumId });
  box.append(el('h4', { id: sumId }, 'Summary (share of the audio)'));
  for (const [model, fractions] of Object.entries(summary)) {
    const fig = el('figure', { class: 'summary-model', 'data-model': model });
    fig.append(el('figcaption', {}, model));
    const bar = el('div', { class: 'stack', 'aria-hidden': 'true' });
    const list = el('ul', { class: 'fractions' });
    for (const [key, value] of Object.entries(fractions)) {
      if (!key.endsWith('_fraction')) continue; // a speaker's gender is in the speakers' legend, not a share of the audio
      const label = fractionLabel(key);
      if (value > 0) {
        const part = el('span', { class: 'part', title: `${label} ${formatPercent(value)}` });
        part.style.width = `${value * 100}%`;
        paintLabel(part, label);
        bar.append(part);
      }
      list.append(fractionItem(key, label, value));
    }
    fig.append(bar, list);
    box.append(fig);
  }
  return box;
}

function fractionItem(key: string, label: string, value: number): HTMLElement {
  const li = el('li', { 'data-key': key, 'data-value': String(value) });
  const meter = el('span', { class: 'meter', 'aria-hidden': 'true' });
  const fill = el('span', { class: 'fill' });
  fill.style.width = `${value * 100}%`;
  paintLabel(fill, label);
  meter.append(fill);
  li.append(swatch(label), el('span', { class: 'name' }, label), meter, el('span', { class: 'value' }, formatPercent(value)));
  return li;
}

function tooltipLines(model: string, s: Segment, atMs: number | null, step?: { result: string; confidence: number } | null): string[] {
  if (model === 'gender' && s.result === 'no_speech') return [...tooltipLinesOf(model, s, atMs, step), GENDER_NO_SPEECH_NOTE];
  return tooltipLinesOf(model, s, atMs, step);
}

function tooltipLinesOf(model: string, s: Segment, atMs: number | null, step?: { result: string; confidence: number } | null): string[] {
  const lines = [`${model}: ${s.result}`];
  if (atMs !== null) lines.push(`at ${formatTime(atMs)}${step ? ` · step ${step.result} ${step.confidence.toFixed(4)}` : ''}`);
  lines.push(`segment ${formatTime(s.timestamp_start)} – ${formatTime(s.timestamp_end)}`);
  lines.push(`confidence ${s.confidence.toFixed(4)}`);
  return lines;
}

/** The time step under `t` (ms) for one model, from the time series. */
function stepConfidence(ch: ChannelResult, model: string, t: number): { result: string; confidence: number } | null {
  const ts = ch.time_series;
  if (!ts.length) return null;
  let lo = 0;
  let hi = ts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ts[mid]!.timestamp <= t) lo = mid;
    else hi = mid - 1;
  }
  return ts[lo]!.results[model] ?? null;
}

function rawClassesOf(ch: ChannelResult, model: string): string[] {
  const first = ch.time_series.find((t) => t.raw?.[model]);
  return first ? Object.keys(first.raw![model]!) : [];
}
