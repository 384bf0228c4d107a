/**
 * The Live view: the microphone (getUserMedia -> AudioWorklet, web/src/mic-worklet.ts) streamed
 * as f32le at the AudioContext's rate over the WebSocket GET /stream, opened with a single-use
 * stream token (POST /stream-tokens; the API key never goes into a URL). Each step result
 * goes to the Live panel (web/src/live-view.ts); Stop sends {"type":"end"}, so the last steps
 * still arrive.
 */
import { ApiProblem, type AurisApi, type TimeStep } from './api.js';
import { LiveView } from './live-view.js';

export interface LiveDeps {
  api: AurisApi;
  /** Models to run (the New job form's selection). */
  models(): string[];
  /** ms per result (the New job form's output period). */
  outputPeriodMs(): number;
  /** The form's num_speakers / max_speakers (with the speakers model), or why they are wrong. */
  speakerCounts(): { num_speakers?: number; max_speakers?: number } | string;
}

interface Session {
  ws: WebSocket;
  ctx: AudioContext;
  mic: MediaStream;
  ended: boolean;
}

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => document.getElementById(id) as T;

/** Why the microphone could not be opened, in words a user can act on. */
export function micErrorText(err: unknown): string {
  const name = (err as { name?: string } | null)?.name ?? '';
  if (name === 'NotAllowedError' || name === 'SecurityError') {
    return 'Microphone access was refused. Allow the microphone for this site in the browser (the icon in the address bar), then press Start again.';
  }
  if (name === 'NotFoundError' || name === 'OverconstrainedError') return 'No microphone was found. Connect one and press Start again.';
  if (name === 'NotReadableError') return 'The microphone is in use by another application or could not be read.';
  return `The microphone could not be opened (${(err as Error)?.message ?? String(err)}).`;
}

/** Close codes of GET /stream (docs/streaming.md) that need no explanation beyond the server's message. */
function closeText(code: number, message: string | undefined): string {
  if (code === 1000) return 'Stopped.';
  if (message) return `Stream ended: ${message} (close ${code}).`;
  return code === 1006 ? 'The connection to the server was lost.' : `Stream ended (close ${code}).`;
}

/** The Live view's controls and messages. */
interface LiveUi {
  view: LiveView;
  setRunning(running: boolean): void;
  say(text: string): void;
  fail(text: string): void;
  clearError(): void;
}

function liveUi(): LiveUi & { start: HTMLButtonElement; stop: HTMLButtonElement; clear: HTMLButtonElement } {
  const start = $<HTMLButtonElement>('live-start');
  const stop = $<HTMLButtonElement>('live-stop');
  const status = $('live-status');
  const error = $('live-error');
  return {
    start,
    stop,
    clear: $<HTMLButtonElement>('live-clear'),
    view: new LiveView($('live-results')),
    setRunning: (running) => {
      start.disabled = running;
      stop.disabled = !running;
    },
    say: (text) => void (status.textContent = text),
    fail: (text) => void (error.textContent = text),
    clearError: () => void (error.textContent = ''),
  };
}

export function initLive(deps: LiveDeps): void {
  const ui = liveUi();
  let session: Session | null = null;

  const begin = async (): Promise<void> => {
    ui.clearError();
    const models = deps.models();
    if (models.length === 0) return ui.fail('Choose at least one model in the New job form.');
    const counts = deps.speakerCounts();
    if (typeof counts === 'string') return ui.fail(counts);
    if (!navigator.mediaDevices?.getUserMedia) return ui.fail('This page cannot use the microphone: it needs HTTPS (or localhost).');
    ui.setRunning(true);
    ui.say('Opening the microphone…');
    const inputs = await openInputs(deps, ui);
    if (!inputs) return;
    ui.view.clear();
    ui.view.start();
    const s = streamMicrophone(inputs, models, deps.outputPeriodMs(), counts, ui, (ended) => {
      if (session === ended) session = null;
    });
    session = s;
  };

  ui.start.addEventListener('click', () => void begin());
  ui.stop.addEventListener('click', () => {
    const s = session;
    if (!s || s.ended) return;
    s.ended = true;
    for (const t of s.mic.getTracks()) t.stop();
    ui.say('Finishing: the last results are on their way…');
    if (s.ws.readyState === WebSocket.OPEN) s.ws.send(JSON.stringify({ type: 'end' }));
    else s.ws.close();
  });
  ui.clear.addEventListener('click', () => {
    ui.view.clear();
    ui.clearError();
    if (!session) ui.say('');
  });
  ui.setRunning(false);
}

interface Inputs {
  mic: MediaStream;
  ctx: AudioContext;
  token: string;
}

/** The microphone, the audio context with the capture worklet, and a stream token; null (and the reason shown) on failure. */
async function openInputs(deps: LiveDeps, ui: LiveUi): Promise<Inputs | null> {
  const failed = (text: string): null => {
    ui.setRunning(false);
    ui.say('');
    ui.fail(text);
    return null;
  };
  let mic: MediaStream;
  try {
    mic = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
  } catch (err) {
    return failed(micErrorText(err));
  }
  const ctx = new AudioContext();
  try {
    await ctx.audioWorklet.addModule(new URL('./mic-worklet.js', import.meta.url));
    return { mic, ctx, token: await deps.api.createStreamToken() };
  } catch (err) {
    release({ mic, ctx });
    return failed(err instanceof ApiProblem ? `${err.message} (${err.code})` : `The live stream could not start (${(err as Error).message}).`);
  }
}

/** Opens GET /stream and sends the microphone's samples to it; each step result extends the lanes. */
function streamMicrophone(
  { mic, ctx, token }: Inputs,
  models: string[],
  outputPeriodMs: number,
  counts: { num_speakers?: number; max_speakers?: number },
  ui: LiveUi,
  onClosed: (s: Session) => void,
): Session {
  const query = new URLSearchParams({ token, models: models.join(','), output_period: String(outputPeriodMs), sample_rate: String(ctx.sampleRate), encoding: 'f32le' });
  for (const [k, v] of Object.entries(counts)) if (v !== undefined) query.set(k, String(v));
  const url = new URL(`/stream?${query}`, location.href);
  url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  const s: Session = { ws, ctx, mic, ended: false };
  const node = new AudioWorkletNode(ctx, 'auris-mic', { numberOfInputs: 1, numberOfOutputs: 0, channelCount: 1 });
  node.port.onmessage = (ev: MessageEvent<ArrayBuffer>) => {
    ui.view.setLevel(new Float32Array(ev.data));
    if (ws.readyState === WebSocket.OPEN && !s.ended) ws.send(ev.data);
  };
  ctx.createMediaStreamSource(mic).connect(node);
  let serverError: string | undefined;
  ws.onopen = () => ui.say(`Listening at ${ctx.sampleRate} Hz… provisional results appear after about 70 ms for speech, 0.3 s for the other models (lighter), final ones after the models' lookahead (up to 1.5 s).`);
  ws.onmessage = (ev: MessageEvent<string>) => {
    const msg = JSON.parse(ev.data) as TimeStep & { type?: string; final?: boolean; code?: string; message?: string };
    // provisional results (final false) first, each replaced by its step's final one
    if (msg.type === undefined) ui.view.addStep(msg, outputPeriodMs, msg.final !== false);
    else if (msg.type === 'error') serverError = `${msg.message ?? ''} [${msg.code ?? ''}]`;
  };
  ws.onclose = (ev) => {
    release(s);
    onClosed(s);
    ui.setRunning(false);
    if (ev.code === 1000) ui.say('Stopped.');
    else {
      ui.say('');
      ui.fail(closeText(ev.code, serverError));
    }
  };
  return s;
}

function release(s: Pick<Session, 'mic' | 'ctx'>): void {
  for (const t of s.mic.getTracks()) t.stop();
  void s.ctx.close().catch(() => undefined);
}
