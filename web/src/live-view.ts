/**
 * What the Live view shows while a stream runs, in the results column: one lane per model whose
 * blocks sit at their time on a shared, scrolling time axis (the newest steps stay in view), the
 * latest label per model, a legend of the labels seen, the microphone's level, and the summary
 * so far (each label's share of the steps received). The speakers model gets one lane per
 * speaker instead, added when a new speaker appears (a step shown never changes), and a legend
 * of the speakers with their talk time so far. Pure DOM; web/src/live.ts feeds it.
 */
import type { ModelResult, TimeStep } from './api.js';
import { classColour, formatPercent, formatTime, paintLabel, SPEAKERS_MODEL, speakerLabels, speakerNumber } from './data.js';
import { GENDER_NO_SPEECH_NOTE, speakerNumberChip } from './timeline.js';

/** Narrowest block (px) with the speaker's number written in it. */
const MIN_NUMBER_PX = 16;

/** Horizontal scale of the lanes: pixels per second of audio. */
const PX_PER_SECOND = 40;
const pxAt = (ms: number): number => (ms / 1000) * PX_PER_SECOND;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

export class LiveView {
  private readonly names: HTMLElement;
  private readonly scroll: HTMLElement;
  private readonly axis: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly speakerLegend: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly level: HTMLMeterElement;
  private readonly levelText: HTMLElement;
  private readonly counts = new Map<string, Map<string, number>>();
  /** Per speaker label, the timestamp of its last block (a block right after it continues the run). */
  private readonly lastSpeakerStep = new Map<string, number>();
  private periodMs = 0;
  private nextTickS = 0;
  /** Provisional blocks shown (lighter) until their step's final replaces them: timestamp -> blocks. */
  private readonly provisional = new Map<number, HTMLElement[]>();

  constructor(private readonly root: HTMLElement) {
    this.names = root.querySelector<HTMLElement>('.live-names')!;
    this.scroll = root.querySelector<HTMLElement>('.live-scroll')!;
    this.axis = root.querySelector<HTMLElement>('.live-axis')!;
    this.legend = root.querySelector<HTMLElement>('.live-legend')!;
    this.speakerLegend = root.querySelector<HTMLElement>('.live-speaker-legend')!;
    this.summary = root.querySelector<HTMLElement>('.live-summary')!;
    this.level = root.querySelector<HTMLMeterElement>('meter')!;
    this.levelText = root.querySelector<HTMLElement>('.live-level-text')!;
  }

  /** Shows the view (the results column) for a new stream. */
  start(): void {
    this.root.hidden = false;
  }

  /**
   * One step result: a block per model at its time, the axis up to its end, legend and summary.
   * A provisional result (final false: docs/streaming.md) is drawn lighter at once and counted
   * nowhere; its step's final result replaces it.
   */
  addStep(step: TimeStep, periodMs: number, final = true): void {
    this.periodMs = periodMs;
    if (!final) return this.addProvisional(step, periodMs);
    for (const b of this.provisional.get(step.timestamp) ?? []) b.remove();
    this.provisional.delete(step.timestamp);
    for (const [model, r] of Object.entries(step.results)) {
      if (model === SPEAKERS_MODEL) {
        this.addSpeakerStep(step.timestamp, r, periodMs);
        this.count(model, r.result);
        continue;
      }
      const block = el('span', { class: 'live-step', 'data-label': r.result, 'data-t': String(step.timestamp) });
      block.title = `${(step.timestamp / 1000).toFixed(2)} s: ${r.result} (${r.confidence.toFixed(2)})${model === 'gender' && r.result === 'no_speech' ? `. ${GENDER_NO_SPEECH_NOTE}` : ''}`;
      block.style.left = `${pxAt(step.timestamp)}px`;
      block.style.width = `${pxAt(periodMs)}px`;
      block.style.background = classColour(r.result);
      this.laneOf(model).append(block);
      this.names.querySelector(`[data-model="${model}"] .live-now`)!.textContent = `${r.result} ${r.confidence.toFixed(2)}`;
      this.count(model, r.result);
    }
    this.extendAxis(step.timestamp + periodMs);
    this.scroll.scrollLeft = this.scroll.scrollWidth;
    this.renderLegend();
    this.renderSpeakerLegend();
    this.renderSummary();
  }

  /**
   * A provisional step: lighter blocks (class live-provisional) and the latest label marked as
   * provisional. A step may get several (speech first, then every model: docs/streaming.md); each
   * holds all that the earlier ones held, so it replaces them.
   */
  private addProvisional(step: TimeStep, periodMs: number): void {
    for (const b of this.provisional.get(step.timestamp) ?? []) b.remove();
    const blocks: HTMLElement[] = [];
    for (const [model, r] of Object.entries(step.results)) {
      if (model === SPEAKERS_MODEL) {
        // the provisional speaker (docs/streaming.md): a lighter block in that speaker's lane until the final
        const block = this.addProvisionalSpeaker(step.timestamp, r, periodMs);
        if (block) blocks.push(block);
        continue;
      }
      const block = el('span', { class: 'live-step live-provisional', 'data-label': r.result, 'data-t': String(step.timestamp) });
      block.title = `${(step.timestamp / 1000).toFixed(2)} s: ${r.result} (${r.confidence.toFixed(2)}), provisional`;
      block.style.left = `${pxAt(step.timestamp)}px`;
      block.style.width = `${pxAt(periodMs)}px`;
      block.style.background = classColour(r.result);
      this.laneOf(model).append(block);
      blocks.push(block);
      this.names.querySelector(`[data-model="${model}"] .live-now`)!.textContent = `${r.result} ${r.confidence.toFixed(2)}…`;
    }
    this.provisional.set(step.timestamp, blocks);
    this.extendAxis(step.timestamp + periodMs);
    this.scroll.scrollLeft = this.scroll.scrollWidth;
  }

  /** A speakers step: a block in the lane of its speaker (created when the speaker first appears); no_speech and silence are not drawn. */
  private addSpeakerStep(t: number, r: ModelResult, periodMs: number): void {
    const n = speakerNumber(r.result);
    // Beside the speaker lanes: who talks in the latest step.
    for (const now of this.names.querySelectorAll<HTMLElement>(`.live-name[data-model="${SPEAKERS_MODEL}"] .live-now`)) now.textContent = '';
    if (n === null) return;
    const block = el('span', { class: 'live-step', 'data-label': r.result, 'data-t': String(t) });
    block.title = `${(t / 1000).toFixed(2)} s: ${r.result} (${r.confidence.toFixed(2)})`;
    block.style.left = `${pxAt(t)}px`;
    block.style.width = `${pxAt(periodMs)}px`;
    paintLabel(block, r.result);
    // The number at the start of each run of the speaker's blocks, where it fits.
    if (this.lastSpeakerStep.get(r.result) !== t - periodMs && pxAt(periodMs) >= MIN_NUMBER_PX) block.append(speakerNumberChip(n));
    this.lastSpeakerStep.set(r.result, t);
    this.speakerLaneOf(r.result).append(block);
    this.names.querySelector<HTMLElement>(`.live-name[data-speaker="${r.result}"] .live-now`)!.textContent = `now ${r.confidence.toFixed(2)}`;
  }

  /** A provisional speakers step: a lighter block in its speaker's lane (none for no_speech and silence). */
  private addProvisionalSpeaker(t: number, r: ModelResult, periodMs: number): HTMLElement | undefined {
    if (speakerNumber(r.result) === null) return undefined;
    const block = el('span', { class: 'live-step live-provisional', 'data-label': r.result, 'data-t': String(t) });
    block.title = `${(t / 1000).toFixed(2)} s: ${r.result} (${r.confidence.toFixed(2)}), provisional`;
    block.style.left = `${pxAt(t)}px`;
    block.style.width = `${pxAt(periodMs)}px`;
    paintLabel(block, r.result);
    this.speakerLaneOf(r.result).append(block);
    return block;
  }

  /** The lane of one speaker, created on its first block after the other speakers' lanes (or last). */
  private speakerLaneOf(label: string): HTMLElement {
    const sel = `[data-model="${SPEAKERS_MODEL}"][data-speaker="${label}"]`;
    let lane = this.scroll.querySelector<HTMLElement>(`.live-lane${sel}`);
    if (lane) return lane;
    const name = el('div', { class: 'live-name live-speaker', 'data-model': SPEAKERS_MODEL, 'data-speaker': label });
    const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
    paintLabel(sw, label);
    name.append(sw, el('span', { class: 'live-model' }, label), el('span', { class: 'live-now' }));
    lane = el('div', { class: 'live-lane live-steps', 'data-model': SPEAKERS_MODEL, 'data-speaker': label, role: 'img', 'aria-label': `${label} (speakers) over time` });
    const prevNames = this.names.querySelectorAll(`.live-name[data-model="${SPEAKERS_MODEL}"]`);
    const prevLanes = this.scroll.querySelectorAll(`.live-lane[data-model="${SPEAKERS_MODEL}"]`);
    if (prevNames.length) prevNames[prevNames.length - 1]!.after(name);
    else this.names.append(name);
    if (prevLanes.length) prevLanes[prevLanes.length - 1]!.after(lane);
    else this.scroll.insertBefore(lane, this.axis);
    return lane;
  }

  /** The speakers seen so far with their talk time (steps x output period) and share of the steps. */
  private renderSpeakerLegend(): void {
    const counts = this.counts.get(SPEAKERS_MODEL);
    if (!counts) return void this.speakerLegend.replaceChildren();
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    this.speakerLegend.replaceChildren(
      ...speakerLabels(counts.keys()).map((label) => {
        const steps = counts.get(label)!;
        const li = el('li', { 'data-speaker': label, 'data-steps': String(steps) });
        const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
        paintLabel(sw, label);
        li.append(sw, el('span', { class: 'speaker-name' }, label), el('span', { class: 'talk' }, `${formatTime(steps * this.periodMs)} · ${formatPercent(steps / total)}`));
        return li;
      }),
    );
  }

  /** The microphone's level of the last block, dBFS. */
  setLevel(samples: Float32Array): void {
    let sum = 0;
    for (const v of samples) sum += v * v;
    const db = samples.length ? 10 * Math.log10(sum / samples.length + 1e-12) : -120;
    this.level.value = Math.max(-60, Math.min(0, db));
    this.levelText.textContent = `${Math.max(-60, db).toFixed(0)} dBFS`;
  }

  clear(): void {
    this.names.replaceChildren();
    for (const lane of [...this.scroll.querySelectorAll('.live-lane')]) lane.remove();
    this.axis.replaceChildren();
    this.nextTickS = 0;
    this.provisional.clear();
    this.counts.clear();
    this.lastSpeakerStep.clear();
    this.legend.replaceChildren();
    this.speakerLegend.replaceChildren();
    this.summary.replaceChildren();
    this.level.value = -60;
    this.levelText.textContent = '';
  }

  /** The lane of one model (created on its first step), before the axis. */
  private laneOf(model: string): HTMLElement {
    let lane = this.scroll.querySelector<HTMLElement>(`.live-lane[data-model="${model}"]`);
    if (lane) return lane;
    const name = el('div', { class: 'live-name', 'data-model': model });
    name.append(el('span', { class: 'live-model' }, model), el('span', { class: 'live-now' }));
    this.names.append(name);
    lane = el('div', { class: 'live-lane live-steps', 'data-model': model, role: 'img', 'aria-label': `${model} over time` });
    this.scroll.insertBefore(lane, this.axis);
    return lane;
  }

  /** Tick labels every second up to endMs; the lanes are as wide as the axis. */
  private extendAxis(endMs: number): void {
    for (; this.nextTickS * 1000 <= endMs; this.nextTickS++) {
      const s = this.nextTickS;
      const tick = el('span', { class: 'live-tick', 'data-s': String(s) }, s % 5 === 0 ? `${s} s` : '');
      tick.style.left = `${pxAt(s * 1000)}px`;
      this.axis.append(tick);
    }
    const width = `${pxAt(endMs)}px`;
    for (const e of [this.axis, ...this.scroll.querySelectorAll<HTMLElement>('.live-lane')]) e.style.width = width;
  }

  private count(model: string, label: string): void {
    const m = this.counts.get(model) ?? new Map<string, number>();
    m.set(label, (m.get(label) ?? 0) + 1);
    this.counts.set(model, m);
  }

  private renderLegend(): void {
    const labels = new Set<string>();
    // The speakers model's labels are in its own lanes and legend.
    for (const [model, m] of this.counts) if (model !== SPEAKERS_MODEL) for (const l of m.keys()) labels.add(l);
    const items = [...labels].map((label) => {
      const li = el('li', { 'data-label': label });
      const sw = el('span', { class: 'swatch', 'aria-hidden': 'true' });
      sw.style.background = classColour(label);
      li.append(sw, document.createTextNode(label));
      return li;
    });
    if (this.counts.get('gender')?.has('no_speech')) items.push(el('li', { class: 'legend-note' }, GENDER_NO_SPEECH_NOTE));
    this.legend.replaceChildren(...items);
  }

  private renderSummary(): void {
    const rows = [...this.counts].map(([model, labels]) => {
      const total = [...labels.values()].reduce((a, b) => a + b, 0);
      const parts = [...labels].sort((a, b) => b[1] - a[1]).map(([l, n]) => `${l} ${formatPercent(n / total)}`);
      const dd = el('dd', { 'data-model': model }, parts.join(', '));
      return [el('dt', {}, model), dd];
    });
    this.summary.replaceChildren(...rows.flat());
  }
}
