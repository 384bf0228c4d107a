/**
 * The typed live-analysis client, one API for both transports (docs/streaming.md):
 *
 *   const stream = openStream({ transport: 'ws', url: 'http://127.0.0.1:8080', apiKey }, { models: ['speech'], outputPeriodMs: 1024, sampleRate: 16000 });
 *   void pipeAudio(stream, someReadable);          // or stream.write(chunk) ... stream.end()
 *   for await (const m of stream) if (m.type === 'step') console.log(m.step);
 *
 * Messages come in order: steps, then the summary and the transitions when asked. Each step
 * message says `final`: with results 'all' (the default) a step's provisional results
 * (final = false: speech first, then every model; each holds all the earlier ones held) may
 * come before its final one (docs/streaming.md); results 'final' gives finals only. A stream
 * that the server ends with an error makes the iteration throw a StreamClientError carrying
 * the service's stable code (INVALID_PARAMETER, TOO_MANY_STREAMS, IDLE_TIMEOUT, ...).
 */
import * as grpc from '@grpc/grpc-js';
import WebSocket from 'ws';
import type { Segment, TimeStepResult } from '../analysis/postprocess';
import { createClient, openAnalyzeStream, stepJson, type AnalysisClient } from '../grpc/client';
import type { AudioEncodingName, StepResultMsg, StreamConfigMsg } from '../grpc/proto';

export type StreamTarget =
  /** WebSocket GET /stream on the REST port: the x-api-key header (servers) or a stream token (POST /stream-tokens). */
  | { transport: 'ws'; url: string; apiKey?: string; token?: string }
  /** gRPC Analyze on `host:port`; pass `client` to share one channel between streams. */
  | { transport: 'grpc'; address: string; apiKey: string; client?: AnalysisClient };

export interface StreamClientOptions {
  models: readonly string[];
  outputPeriodMs: number;
  sampleRate: number;
  /** Default s16le. mulaw / alaw: G.711 at 8000 Hz. */
  encoding?: 's16le' | 'f32le' | 'mulaw' | 'alaw';
  channels?: number;
  channel?: number;
  includeSummary?: boolean;
  includeTransitions?: boolean;
  includeRaw?: boolean;
  volumeThreshold?: number;
  /** The speakers model: the number of speakers when known (num_speakers, 1..20). */
  numSpeakers?: number;
  /** The speakers model: at most this many speakers (max_speakers, 1..20). */
  maxSpeakers?: number;
  streamId?: string;
  /** 'all' (default): provisional and final step results; 'final': finals only (docs/streaming.md). */
  results?: 'all' | 'final';
}

export type StreamMessage =
  /** final = false: a provisional result of the step; its final one follows (docs/streaming.md). */
  | { type: 'step'; step: TimeStepResult; final: boolean }
  | { type: 'summary'; summary: Record<string, Record<string, number>>; durationMs: number; steps: number }
  | { type: 'transitions'; transitions: Record<string, Segment[]> };

/** A stream ended by the server with an error (code: the service's stable code). */
export class StreamClientError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** WebSocket close code or gRPC status. */
    readonly status?: number,
  ) {
    super(message);
    this.name = 'StreamClientError';
  }
}

export interface AudioStream extends AsyncIterable<StreamMessage> {
  /** The stream id (the server's, or the one given); rejects if the stream failed to start. */
  readonly streamId: Promise<string>;
  /** Sends audio bytes (any size); resolves when the transport takes more (backpressure). */
  write(audio: Uint8Array): Promise<void>;
  /** End of audio: the server flushes the last steps, the summary and transitions, then ends. */
  end(): void;
  /** Abandons the stream (no more results). */
  close(): void;
}

/** Messages in arrival order for one consumer; the end or an error after them. */
class MessageQueue implements AsyncIterable<StreamMessage> {
  private readonly items: StreamMessage[] = [];
  private done = false;
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  push(m: StreamMessage): void {
    this.items.push(m);
    this.notify();
  }
  finish(error?: Error): void {
    if (this.done) return;
    this.done = true;
    this.error = error;
    this.notify();
  }
  private notify(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<StreamMessage> {
    for (;;) {
      if (this.items.length > 0) {
        yield this.items.shift()!;
        continue;
      }
      if (this.done) {
        if (this.error) throw this.error;
        return;
      }
      await new Promise<void>((r) => (this.wake = r));
    }
  }
}

/** Opens a live stream on either transport. */
export function openStream(target: StreamTarget, options: StreamClientOptions): AudioStream {
  return target.transport === 'ws' ? openWebSocketStream(target, options) : openGrpcStream(target, options);
}

/** Sends every chunk of `audio` (a Node Readable or any async iterable of bytes), then end(). */
export async function pipeAudio(stream: AudioStream, audio: AsyncIterable<Uint8Array>): Promise<void> {
  for await (const chunk of audio) await stream.write(chunk);
  stream.end();
}

/** The query of GET /stream for these options (without credentials). */
export function streamQuery(o: StreamClientOptions): URLSearchParams {
  const q = new URLSearchParams({ models: o.models.join(','), output_period: String(o.outputPeriodMs), sample_rate: String(o.sampleRate), encoding: o.encoding ?? 's16le' });
  if (o.channels !== undefined) q.set('channels', String(o.channels));
  if (o.channel !== undefined) q.set('channel', String(o.channel));
  if (o.includeSummary) q.set('include_summary', 'true');
  if (o.includeTransitions) q.set('include_transitions', 'true');
  if (o.includeRaw) q.set('include_raw_values', 'true');
  if (o.volumeThreshold !== undefined) q.set('volume_threshold', String(o.volumeThreshold));
  if (o.numSpeakers !== undefined) q.set('num_speakers', String(o.numSpeakers));
  if (o.maxSpeakers !== undefined) q.set('max_speakers', String(o.maxSpeakers));
  if (o.streamId !== undefined) q.set('stream_id', o.streamId);
  if (o.results !== undefined) q.set('results', o.results);
  return q;
}

function openWebSocketStream(target: Extract<StreamTarget, { transport: 'ws' }>, options: StreamClientOptions): AudioStream {
  const q = streamQuery(options);
  if (target.token) q.set('token', target.token);
  const url = `${target.url.replace(/^http/, 'ws').replace(/\/$/, '')}/stream?${q}`;
  const ws = new WebSocket(url, { headers: target.apiKey ? { 'x-api-key': target.apiKey } : {} });
  const queue = new MessageQueue();
  let failure: StreamClientError | undefined;
  let started!: (id: string) => void;
  let notStarted!: (e: Error) => void;
  const streamId = new Promise<string>((resolve, reject) => ((started = resolve), (notStarted = reject)));
  streamId.catch(() => undefined);
  const opened = new Promise<void>((resolve) => ws.once('open', () => resolve()));
  ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
    if (m.type === undefined) {
      const { final, ...step } = m;
      queue.push({ type: 'step', step: step as unknown as TimeStepResult, final: final !== false });
    }
    else if (m.type === 'started') started(String(m.stream_id));
    else if (m.type === 'summary') queue.push({ type: 'summary', summary: m.summary as Record<string, Record<string, number>>, durationMs: Number(m.duration_ms), steps: Number(m.steps) });
    else if (m.type === 'transitions') queue.push({ type: 'transitions', transitions: m.transitions as Record<string, Segment[]> });
    else if (m.type === 'error') failure = new StreamClientError(String(m.code), String(m.message));
  });
  ws.on('error', (e) => (failure ??= new StreamClientError('CONNECTION_FAILED', e.message)));
  ws.on('close', (code, reason) => {
    if (failure) failure = new StreamClientError(failure.code, failure.message, code);
    else if (code !== 1000) failure = new StreamClientError('CONNECTION_CLOSED', `the connection closed with ${code} ${reason.toString()}`.trim(), code);
    notStarted(failure ?? new StreamClientError('CONNECTION_CLOSED', 'the stream ended before it started'));
    queue.finish(failure);
  });
  return {
    streamId,
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    async write(audio) {
      await opened;
      if (ws.readyState !== WebSocket.OPEN) return;
      // Resolves once handed to the kernel: a client cannot outrun its socket.
      await new Promise<void>((resolve) => ws.send(audio, { binary: true }, () => resolve()));
    },
    end() {
      void opened.then(() => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: 'end' })));
    },
    close() {
      ws.terminate();
    },
  };
}

const GRPC_ENCODING: Record<NonNullable<StreamClientOptions['encoding']>, AudioEncodingName> = { s16le: 'PCM_S16LE', f32le: 'PCM_F32LE', mulaw: 'PCM_MULAW', alaw: 'PCM_ALAW' };

/** The StreamConfig message for these options. */
export function grpcConfig(o: StreamClientOptions): StreamConfigMsg {
  const cfg: StreamConfigMsg = {
    models: [...o.models],
    output_period: o.outputPeriodMs,
    sample_rate: o.sampleRate,
    encoding: GRPC_ENCODING[o.encoding ?? 's16le'],
    include_summary: o.includeSummary === true,
    include_transitions: o.includeTransitions === true,
    include_raw_values: o.includeRaw === true,
  };
  if (o.channels !== undefined) cfg.channels = o.channels;
  if (o.channel !== undefined) cfg.channel = o.channel;
  if (o.volumeThreshold !== undefined) cfg.volume_threshold = o.volumeThreshold;
  if (o.numSpeakers !== undefined) cfg.num_speakers = o.numSpeakers;
  if (o.maxSpeakers !== undefined) cfg.max_speakers = o.maxSpeakers;
  if (o.streamId !== undefined) cfg.stream_id = o.streamId;
  if (o.results !== undefined) cfg.results = o.results === 'final' ? 'RESULTS_MODE_FINAL' : 'RESULTS_MODE_ALL';
  return cfg;
}

function openGrpcStream(target: Extract<StreamTarget, { transport: 'grpc' }>, options: StreamClientOptions): AudioStream {
  const client = target.client ?? createClient(target.address);
  const h = openAnalyzeStream(client, target.apiKey, grpcConfig(options));
  const queue = new MessageQueue();
  h.call.on('data', (msg: StepResultMsg) => {
    const hasTransitions = msg.transitions !== undefined && Object.keys(msg.transitions).length > 0;
    if (!msg.summary && !hasTransitions) return queue.push({ type: 'step', step: stepJson(msg, options.models), final: msg.final === true });
    // Protobuf maps have no order: keys in request order, like the WebSocket's JSON.
    const inOrder = <T, U>(map: Record<string, T>, f: (v: T) => U): Record<string, U> =>
      Object.fromEntries(options.models.filter((m) => map[m] !== undefined).map((m) => [m, f(map[m]!)]));
    if (msg.summary) queue.push({ type: 'summary', summary: inOrder(msg.summary.models, (f) => f.fractions), durationMs: msg.summary.duration_ms, steps: Number(msg.summary.steps) });
    if (hasTransitions) {
      queue.push({ type: 'transitions', transitions: inOrder(msg.transitions!, (s) => (s.segments ?? []).map(segmentJson)) });
    }
  });
  void h.status.then((status) => {
    if (!target.client) client.close();
    if (status.code === grpc.status.OK) return queue.finish();
    queue.finish(failed(status));
  });
  const failed = (st: grpc.StatusObject): StreamClientError =>
    new StreamClientError(String(st.metadata?.get('auris-error-code')[0] ?? grpc.status[st.code] ?? 'UNKNOWN'), st.details, st.code);
  // The server sends the id in its response headers; a refused call has none.
  const streamId = h.metadata.then(async (md) => {
    const id = md.get('auris-stream-id')[0];
    if (id !== undefined) return String(id);
    const st = await h.status;
    if (st.code === grpc.status.OK) return '';
    throw failed(st);
  });
  streamId.catch(() => undefined);
  return {
    streamId,
    [Symbol.asyncIterator]: () => queue[Symbol.asyncIterator](),
    write: (audio) => h.send(audio),
    end: () => h.end(),
    close: () => h.call.cancel(),
  };
}

function segmentJson(s: Segment): Segment {
  return { timestamp_start: Number(s.timestamp_start), timestamp_end: Number(s.timestamp_end), result: s.result, confidence: s.confidence ?? 0 };
}
