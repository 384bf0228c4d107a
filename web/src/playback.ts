/**
 * Playback of a channel's audio from a chosen time, with a cursor over the lanes. The audio is
 * the uploaded file as decoded in this tab (the server keeps no audio): a click on a segment,
 * Enter on a focused segment, or the play bar under the waveform plays from there through
 * WebAudio, and a cursor follows the sound across every track.
 */
import { formatTime } from './data.js';

export interface PlaybackInput {
  samples: { data: Float32Array; sampleRate: number };
  endMs: number;
  /** The element the cursor is positioned in (relative), and the track that sets the time scale. */
  host: HTMLElement;
  track: () => HTMLElement | null;
}

export interface Player {
  /** The play bar: Play/Stop and the current time. */
  bar: HTMLElement;
  play(fromMs: number): void;
  stop(): void;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

export function createPlayer(input: PlaybackInput): Player {
  const cursor = el('div', { class: 'play-cursor', 'aria-hidden': 'true' });
  cursor.hidden = true;
  input.host.append(cursor);
  const button = el('button', { type: 'button', class: 'secondary play-button', 'aria-pressed': 'false' }, 'Play');
  const time = el('span', { class: 'play-time', role: 'timer', 'aria-live': 'off' }, formatTime(0));
  const bar = el('div', { class: 'play-bar' });
  bar.append(button, time);

  let ctx: AudioContext | null = null;
  let source: AudioBufferSourceNode | null = null;
  let frame = 0;
  let startedAt = 0; // ctx.currentTime when the audio at fromMs started
  let fromMs = 0;

  const show = (ms: number): void => {
    const track = input.track();
    if (!track) return;
    const t = track.getBoundingClientRect();
    const h = input.host.getBoundingClientRect();
    cursor.hidden = false;
    cursor.style.left = `${t.left - h.left + (Math.min(ms, input.endMs) / input.endMs) * t.width}px`;
    cursor.dataset.ms = String(Math.round(ms));
    time.textContent = formatTime(ms);
  };
  const tick = (): void => {
    if (!ctx || !source) return;
    show(fromMs + (ctx.currentTime - startedAt) * 1000);
    frame = requestAnimationFrame(tick);
  };
  const stop = (): void => {
    cancelAnimationFrame(frame);
    if (source) {
      source.onended = null;
      source.stop();
      source.disconnect();
    }
    source = null;
    button.textContent = 'Play';
    button.setAttribute('aria-pressed', 'false');
    input.host.dataset.playing = 'false';
  };
  const play = (atMs: number): void => {
    stop();
    // One AudioContext per channel view, made on the first click (browsers allow sound only after a gesture).
    ctx ??= new AudioContext();
    const { data, sampleRate } = input.samples;
    const buffer = ctx.createBuffer(1, data.length, sampleRate);
    buffer.getChannelData(0).set(data);
    source = ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(ctx.destination);
    source.onended = stop;
    fromMs = Math.max(0, Math.min(atMs, input.endMs));
    startedAt = ctx.currentTime;
    source.start(0, fromMs / 1000);
    void ctx.resume();
    button.textContent = 'Stop';
    button.setAttribute('aria-pressed', 'true');
    input.host.dataset.playing = 'true';
    show(fromMs);
    frame = requestAnimationFrame(tick);
  };
  button.addEventListener('click', () => (source ? stop() : play(Number(cursor.dataset.ms ?? 0) % input.endMs)));
  return { bar, play, stop };
}
