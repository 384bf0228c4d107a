/**
 * The WebSocket transport of live analysis, on the REST port (docs/streaming.md):
 *
 *   GET /stream?models=...&output_period=...&sample_rate=...[&encoding=s16le|f32le|mulaw|alaw]
 *     auth: `x-api-key` header (servers) or `token=` from POST /stream-tokens (browsers)
 *     client -> server: binary frames of audio (any size), then text {"type":"end"} (or close: discard)
 *     server -> client: {"type":"started","stream_id"}, one time-step result per output step
 *                       (SPEC shape, no `type`), then {"type":"summary"} / {"type":"transitions"}
 *                       when asked, then close 1000; errors: {"type":"error","code","message"}
 *                       then a 4xxx close code (the `ws` column of the catalogue, src/errors.ts).
 *
 * The stream itself (flow control, quotas, idle timeouts) is the transport-free LiveStream;
 * this file only frames messages. Output backpressure: ws's bufferedAmount above
 * SEND_HIGH_WATER_BYTES blocks the stream's output until the socket has written it.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import '@fastify/websocket'; // the `websocket: true` route option
import { AurisError, errorCode, type ErrorCode, wsCloseCode } from '../errors';
import type { ApiKeyRegistry } from '../http/auth';
import type { AuthFailureThrottle } from '../http/auth-throttle';
import type { Owner } from '../jobs/service';
import type { StreamEncoding } from '../pipeline/analyze-stream';
import { validateStreamParams, type ResultsMode, type StreamParams } from '../streaming/config';
import type { StreamHub } from '../streaming/hub';
import type { LiveStream, StreamError, StreamOutput, StreamSink } from '../streaming/live-stream';
import type { StreamTokenStore } from '../streaming/tokens';

export const WS_CLOSE_NORMAL = 1000;

/** Query encodings. */
export const WS_ENCODINGS: Readonly<Record<string, StreamEncoding>> = { s16le: 's16le', f32le: 'f32le', mulaw: 'mulaw', alaw: 'alaw' };

/** Unsent bytes in the socket above which the stream's output waits. */
export const SEND_HIGH_WATER_BYTES = 256 * 1024;

const PARAMS = new Set([
  'token', 'models', 'output_period', 'volume_threshold', 'include_raw_values', 'include_summary', 'include_transitions',
  'sample_rate', 'encoding', 'channels', 'channel', 'stream_id', 'num_speakers', 'max_speakers', 'results',
]);

/** Query `results`: provisional and final results (default), or finals only. */
export const WS_RESULTS_MODES: Readonly<Record<string, ResultsMode>> = { all: 'all', final: 'final' };

export interface StreamRouteOptions {
  hub: StreamHub;
  keys: Pick<ApiKeyRegistry, 'lookup'>;
  tokens: StreamTokenStore;
  /** The REST server's failed-authentication throttle (the same addresses, the same limit). */
  authThrottle?: Pick<AuthFailureThrottle, 'failure'>;
}

/** A refused stream or message, with the code sent to the client. */
function wsError(code: ErrorCode, message: string): AurisError {
  return new AurisError(code, message);
}

/** The stream parameters of the query (strings) in the shared StreamParams shape. */
/** An API key in the URL is refused before credentials are looked at (it would end up in proxy and access logs). */
function refuseKeyInUrl(query: Record<string, unknown>): void {
  for (const k of Object.keys(query)) {
    if (k === 'api_key' || k === 'x-api-key') throw wsError('INVALID_PARAMETER', 'an API key is never accepted in a URL: send the x-api-key header, or a stream token (POST /stream-tokens) as token=');
  }
}

export function queryParams(query: Record<string, unknown>): StreamParams {
  refuseKeyInUrl(query);
  for (const [k, v] of Object.entries(query)) {
    if (!PARAMS.has(k)) throw wsError('INVALID_PARAMETER', `unknown parameter ${k}; valid: ${[...PARAMS].join(', ')}`);
    if (typeof v !== 'string') throw wsError('INVALID_PARAMETER', `${k} must be given once`);
  }
  const q = query as Record<string, string | undefined>;
  const int = (k: string): number | undefined => {
    const v = q[k];
    if (v === undefined || v === '') return undefined;
    if (!/^\d+$/.test(v)) throw wsError('INVALID_PARAMETER', `${k} must be a non-negative integer, got ${JSON.stringify(v)}`);
    return Number(v);
  };
  const bool = (k: string): boolean => {
    const v = q[k];
    if (v === undefined || v === '' || v === 'false' || v === '0') return false;
    if (v === 'true' || v === '1') return true;
    throw wsError('INVALID_PARAMETER', `${k} must be true or false, got ${JSON.stringify(v)}`);
  };
  const p: StreamParams = {
    models: q.models ?? '',
    include_raw_values: bool('include_raw_values'),
    include_summary: bool('include_summary'),
    include_transitions: bool('include_transitions'),
  };
  const set = <K extends keyof StreamParams>(k: K, v: StreamParams[K] | undefined): void => {
    if (v !== undefined) p[k] = v;
  };
  set('output_period', int('output_period'));
  set('sample_rate', int('sample_rate'));
  set('channels', int('channels'));
  set('channel', int('channel'));
  set('num_speakers', int('num_speakers'));
  set('max_speakers', int('max_speakers'));
  set('encoding', q.encoding);
  set('stream_id', q.stream_id);
  set('results', q.results);
  if (q.volume_threshold !== undefined && q.volume_threshold !== '') {
    const v = Number(q.volume_threshold);
    if (!Number.isFinite(v)) throw wsError('INVALID_PARAMETER', `volume_threshold must be a number (dBFS), got ${JSON.stringify(q.volume_threshold)}`);
    p.volume_threshold = v;
  }
  return p;
}

/** The WebSocket side of a LiveStream. */
class WsSink implements StreamSink {
  stream: LiveStream | undefined;
  private blocked = false;
  constructor(private readonly ws: WebSocket) {}

  send(out: StreamOutput): boolean {
    if (this.ws.readyState !== this.ws.OPEN) return true; // closing: the stream is being cancelled
    for (const msg of outputMessages(out)) this.ws.send(JSON.stringify(msg), this.sent);
    this.blocked = this.ws.bufferedAmount >= SEND_HIGH_WATER_BYTES;
    return !this.blocked;
  }
  /** A message reached the kernel (callbacks come in order): below half the high water, the output resumes. */
  private readonly sent = (err?: Error): void => {
    if (!this.blocked || err || this.ws.bufferedAmount >= SEND_HIGH_WATER_BYTES / 2) return;
    this.blocked = false;
    this.stream?.drained();
  };
  started(streamId: string): void {
    this.ws.send(JSON.stringify({ type: 'started', stream_id: streamId }));
  }
  pauseInput(): void {
    this.ws.pause();
  }
  resumeInput(): void {
    this.ws.resume();
  }
  end(): void {
    this.ws.close(WS_CLOSE_NORMAL, 'done');
  }
  fail(e: StreamError): void {
    closeWithError(this.ws, e);
  }
}

/** The JSON messages of one output: a step is the SPEC time-step result itself. */
function outputMessages(out: StreamOutput): object[] {
  if (out.type === 'step') {
    const { timestamp, ...rest } = out.step;
    return [{ timestamp, final: out.final, ...rest }];
  }
  const s = out.summary;
  const msgs: object[] = [];
  if (s.models) msgs.push({ type: 'summary', summary: s.models, duration_ms: s.durationMs, steps: s.steps });
  if (s.transitions) msgs.push({ type: 'transitions', transitions: s.transitions });
  return msgs;
}

function closeWithError(ws: WebSocket, e: StreamError): void {
  if (ws.readyState !== ws.OPEN) return;
  ws.send(JSON.stringify({ type: 'error', code: e.code, message: e.message }));
  ws.close(wsCloseCode(e.code), e.code.slice(0, 120));
}

/** The owner of the request's credentials (x-api-key header, else a single-use stream token); failures count against the address. */
async function authenticate(req: FastifyRequest, opts: StreamRouteOptions): Promise<Owner> {
  try {
    return await credentialsOwner(req, opts);
  } catch (e) {
    if (e instanceof AurisError && e.code === 'UNAVAILABLE') throw e; // the token store, not the client, failed
    // Valid credentials always pass; beyond its limit an address's failures get 4429.
    const retryAfter = opts.authThrottle?.failure(req.ip).retryAfter ?? 0;
    if (retryAfter > 0) throw wsError('TOO_MANY_AUTH_FAILURES', `too many requests with missing or invalid credentials from this address; retry after ${retryAfter} s`);
    throw e;
  }
}

async function credentialsOwner(req: FastifyRequest, opts: StreamRouteOptions): Promise<Owner> {
  const header = req.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  if (key) {
    const owner = opts.keys.lookup(key);
    if (!owner) throw wsError('INVALID_API_KEY', 'the x-api-key is not valid');
    return owner;
  }
  const token = (req.query as Record<string, unknown>).token;
  if (typeof token !== 'string' || token === '') {
    throw wsError('MISSING_API_KEY', 'credentials are required: the x-api-key header, or token= from POST /stream-tokens');
  }
  let owner: Owner | null;
  try {
    owner = await opts.tokens.redeem(token);
  } catch (e) {
    // Distributed mode: the shared token store (NATS) did not answer. Not the client's fault: no auth failure counted.
    req.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'websocket stream: the stream token could not be checked');
    throw wsError('UNAVAILABLE', 'the stream token could not be checked now (the shared token store is unavailable); retry with a new token');
  }
  if (!owner) throw wsError('INVALID_STREAM_TOKEN', 'the stream token is not valid: unknown, expired or already used');
  return owner;
}

/** Frames that arrive while the credentials are being checked wait, up to this many bytes. */
export const PENDING_FRAMES_MAX_BYTES = 8 * 1024 * 1024;

/** GET /stream (WebSocket). */
export async function websocketStreamRoutes(app: FastifyInstance, opts: StreamRouteOptions): Promise<void> {
  app.get('/stream', { websocket: true }, (ws: WebSocket, req: FastifyRequest) => {
    const sink = new WsSink(ws);
    let stream: LiveStream | undefined;
    // A stream token is redeemed asynchronously (in distributed mode over NATS): a client that sends its
    // audio at once must not lose the first frames, so they wait here until the stream exists.
    let pending: Array<[Buffer, boolean]> | null = [];
    let pendingBytes = 0;
    const handle = (data: Buffer, isBinary: boolean): void => {
      if (!stream || stream.isDone) return;
      if (isBinary) return stream.audio(data);
      let msg: { type?: unknown } | undefined;
      try {
        msg = JSON.parse(data.toString('utf8')) as { type?: unknown };
      } catch {
        msg = undefined;
      }
      if (msg && msg.type === 'end') stream.endInput();
      else stream.fail(wsError('INVALID_MESSAGE', 'text frames must be {"type":"end"}; audio goes in binary frames'));
    };
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!pending) return handle(data, isBinary);
      pendingBytes += data.length;
      if (pendingBytes > PENDING_FRAMES_MAX_BYTES) {
        pending = [];
        return closeWithError(ws, { code: 'UNAVAILABLE', message: 'the credentials could not be checked in time; retry' });
      }
      pending.push([data, isBinary]);
    });
    ws.on('close', () => stream?.cancel('disconnected'));
    const start = async (): Promise<void> => {
      refuseKeyInUrl(req.query as Record<string, unknown>);
      const owner = await authenticate(req, opts);
      if (ws.readyState !== ws.OPEN) return; // closed while its token was checked
      const params = validateStreamParams(queryParams(req.query as Record<string, unknown>), opts.hub.engine.models(), {
        prefix: '',
        encodings: WS_ENCODINGS,
        defaultEncoding: 's16le',
        resultsModes: WS_RESULTS_MODES,
        maxOutputPeriodMs: opts.hub.limits.maxOutputPeriodMs,
      });
      const opened = opts.hub.open(owner, sink, 'websocket');
      if (!('configure' in opened)) return sink.fail(opened);
      stream = opened;
      sink.stream = stream;
      stream.configure(params, params.streamId || `s-${randomUUID()}`);
      const waiting = pending ?? [];
      pending = null;
      for (const [data, isBinary] of waiting) handle(data, isBinary);
    };
    start().catch((e: unknown) => {
      pending = null;
      const code = errorCode(e) ?? 'INTERNAL';
      if (code === 'INTERNAL') req.log.error({ err: e }, 'websocket stream failed to start');
      closeWithError(ws, { code: code === 'INVALID_ARGUMENT' ? 'INVALID_PARAMETER' : code, message: e instanceof Error ? e.message : String(e) });
    });
  });
}
