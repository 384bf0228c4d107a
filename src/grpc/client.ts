/**
 * A small Node client of audioanalysis.v1 (used by `auris stream`, the tests and the
 * benchmark; examples/ shows the same with only @grpc/grpc-js and the proto file).
 */
import * as grpc from '@grpc/grpc-js';
import type { TimeStepResult } from '../analysis/postprocess';
import { AnalyzeRequestMsg, clientConstructor, ListModelsResponseMsg, StepResultMsg, StreamConfigMsg } from './proto';

export interface AnalysisClient extends grpc.Client {
  Analyze(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<AnalyzeRequestMsg, StepResultMsg>;
  ListModels(
    request: Record<string, never>,
    metadata: grpc.Metadata,
    callback: (err: grpc.ServiceError | null, res?: ListModelsResponseMsg) => void,
  ): grpc.ClientUnaryCall;
}

/** A client of `host:port` (plaintext; channel options passed through). */
export function createClient(address: string, options: grpc.ChannelOptions = {}): AnalysisClient {
  const Ctor = clientConstructor();
  return new Ctor(address, grpc.credentials.createInsecure(), options) as unknown as AnalysisClient;
}

export function apiKeyMetadata(apiKey: string | undefined): grpc.Metadata {
  const md = new grpc.Metadata();
  if (apiKey !== undefined) md.set('x-api-key', apiKey);
  return md;
}

export function listModels(client: AnalysisClient, apiKey: string | undefined): Promise<ListModelsResponseMsg> {
  return new Promise((resolve, reject) => {
    client.ListModels({}, apiKeyMetadata(apiKey), (err, res) => (err ? reject(err) : resolve(res!)));
  });
}

/**
 * A StepResult as SPEC.md's streaming time-step JSON: `timestamp`, `results` (and `raw`) keyed
 * by model in `models` order (protobuf maps have no order).
 */
export function stepJson(msg: StepResultMsg, models: readonly string[]): TimeStepResult {
  const results: TimeStepResult['results'] = {};
  const order = [...models, ...Object.keys(msg.results ?? {}).filter((k) => !models.includes(k))];
  for (const m of order) {
    const r = msg.results?.[m];
    if (r) results[m] = { result: r.result, confidence: r.confidence ?? 0 };
  }
  const out: TimeStepResult = { timestamp: Number(msg.timestamp ?? 0), results };
  if (msg.raw && Object.keys(msg.raw).length > 0) {
    const raw: Record<string, Record<string, number>> = {};
    for (const m of order) {
      const values = msg.raw[m]?.values;
      if (values) raw[m] = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v ?? 0]));
    }
    out.raw = raw;
  }
  return out;
}

export interface AnalyzeStreamHandle {
  call: grpc.ClientDuplexStream<AnalyzeRequestMsg, StepResultMsg>;
  /** Sends audio bytes; resolves once grpc-js accepted them (waits for 'drain' under backpressure). */
  send(audio: Uint8Array): Promise<void>;
  /** Half-closes the request stream (end of audio). */
  end(): void;
  /** Resolves with the final status (OK or not); never rejects. */
  status: Promise<grpc.StatusObject>;
  /** Response metadata (carries auris-stream-id). */
  metadata: Promise<grpc.Metadata>;
}

/** Opens an Analyze call and sends `config` as its first message. */
export function openAnalyzeStream(
  client: AnalysisClient,
  apiKey: string | undefined,
  config: StreamConfigMsg,
  options: grpc.CallOptions = {},
): AnalyzeStreamHandle {
  const call = client.Analyze(apiKeyMetadata(apiKey), options);
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  const metadata = new Promise<grpc.Metadata>((resolve) => {
    call.on('metadata', resolve);
    void status.then(() => resolve(new grpc.Metadata()));
  });
  // Errors surface through `status` (and the read side); keep 'error' from being unhandled.
  call.on('error', () => undefined);
  call.write({ config });
  let closed = false;
  void status.then(() => (closed = true));
  return {
    call,
    status,
    metadata,
    send(audio) {
      if (closed) return Promise.resolve();
      if (call.write({ audio: Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength) })) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const done = (): void => {
          call.off('drain', done);
          resolve();
        };
        call.once('drain', done);
        void status.then(done);
      });
    },
    end() {
      if (!closed) call.end();
    },
  };
}
