/**
 * What the Live view shows while a stream runs, in the results column: one lane per model whose
 * blocks sit at their time on a shared, scrolling time axis (the newest steps stay in view), the
 * latest label per model, a legend of the labels seen, the microphone's level, and the summary
 * so far (each label's share of the steps received). Pure DOM; web/src/live.ts feeds it.
 */
import type { TimeStep } from './api.js';
import { classColour, formatPercent } from './data.js';
import { GENDER_NO_SPEECH_NOTE } from './timeline.js';

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
  private readonly summary: HTMLElement;
  private readonly level: HTMLMeterElement;
  private readonly levelText: HTMLElement;
  private readonly counts = new Map<string, Map<string, number>>();
  private nextTickS = 0;

  constructor(private readonly root: HTMLElement) {
    this.names = root.querySelector<HTMLElement>('.live-names')!;
    this.scroll = root.querySelector<HTMLElement>('.live-scroll')!;
    this.axis = root.querySelector<HTMLElement>('.live-axis')!;
    this.legend = root.querySelector<HTMLElement>('.live-legend')!;
    this.summary = root.querySelector<HTMLElement>('.live-summary')!;
    this.level = root.querySelector<HTMLMeterElement>('meter')!;
    this.levelText = root.querySelector<HTMLElement>('.live-level-text')!;
  }

  /** Shows the view (the results column) for a new stream. */
  start(): void {
    this.root.hidden = false;
  }

  /** One step result: a block per model at its time, the axis up to its end, legend and summary. */
  addStep(step: TimeStep, periodMs: number): void {
    for (const [model, r] of Object.entries(step.results)) {
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
    this.renderSummary();
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
    this.counts.clear();
    this.legend.replaceChildren();
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
    for (const m of this.counts.values()) for (const l of m.keys()) labels.add(l);
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
