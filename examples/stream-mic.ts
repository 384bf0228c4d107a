/**
 * Microphone-style streaming client of the auris gRPC API: reads raw PCM from stdin as it is
 * captured and prints each time step as one JSON line as soon as it arrives, with
 * `after_audio_ms`: the time between sending the last byte of the step's audio and receiving
 * its result (for a live source this includes the models' lookahead, see ListModels).
 *
 * Self-contained: only @grpc/grpc-js, @grpc/proto-loader and the proto file, as any Node
 * application would use them.
 *
 *   # build (from the repository root; examples/ is not part of the main tsconfig)
 *   npx tsc --module commonjs --target es2022 --esModuleInterop --skipLibCheck --types node \
 *       --outDir dist/examples examples/stream-mic.ts
 *
 *   # live from the default microphone (ALSA or SoX), 16 kHz mono 16-bit:
 *   arecord -q -f S16_LE -r 16000 -c 1 -t raw | node dist/examples/stream-mic.js --api-key KEY
 *   sox -q -d -t raw -b 16 -e signed -r 16000 -c 1 - | node dist/examples/stream-mic.js --api-key KEY
 *
 * Options: --grpc host:port (default $AURIS_GRPC_ADDRESS or 127.0.0.1:50051), --api-key
 * (default $AURIS_API_KEY), --models (default speech,arousal,gender), --output-period ms
 * (default 512), --rate Hz (default 16000), --channels n (default 1), --raw, --proto <file>.
 * Input is s16le. Ctrl-C (or the end of stdin) ends the stream; the server then sends the
 * last steps.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO = 'audioanalysis/v1/audio_analysis.proto';

function findProto(explicit: string | undefined): string {
  if (explicit) return path.resolve(explicit);
  for (const start of [__dirname, process.cwd()]) {
    let dir = start;
    for (let i = 0; i < 6; i++) {
      const p = path.join(dir, 'proto', PROTO);
      if (fs.existsSync(p)) return p;
      dir = path.dirname(dir);
    }
  }
  throw new Error(`cannot find proto/${PROTO}; pass --proto <file>`);
}

interface StepResult {
  timestamp: number;
  /** false (absent): a provisional result (128 ms of lookahead); true: the step's final result. */
  final?: boolean;
  results?: Record<string, { result: string; confidence?: number }>;
  raw?: Record<string, { values: Record<string, number> }>;
}

function main(): void {
  const { values } = parseArgs({
    options: {
      grpc: { type: 'string', default: process.env['AURIS_GRPC_ADDRESS'] ?? '127.0.0.1:50051' },
      'api-key': { type: 'string', default: process.env['AURIS_API_KEY'] },
      models: { type: 'string', default: 'speech,arousal,gender' },
      'output-period': { type: 'string', default: '512' },
      rate: { type: 'string', default: '16000' },
      channels: { type: 'string', default: '1' },
      raw: { type: 'boolean', default: false },
      proto: { type: 'string' },
    },
  });
  if (!values['api-key']) {
    process.stderr.write('stream-mic: an API key is required (--api-key or $AURIS_API_KEY)\n');
    process.exit(2);
  }
  const protoFile = findProto(values.proto);
  const def = protoLoader.loadSync(protoFile, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { audioanalysis: { v1: { AudioAnalysis: grpc.ServiceClientConstructor } } };
  const client = new pkg.audioanalysis.v1.AudioAnalysis(values.grpc!, grpc.credentials.createInsecure()) as unknown as {
    Analyze(md: grpc.Metadata): grpc.ClientDuplexStream<unknown, StepResult>;
    close(): void;
  };

  const models = values.models!.split(',').map((m) => m.trim()).filter(Boolean);
  const rate = Number(values.rate);
  const channels = Number(values.channels);
  const periodMs = Number(values['output-period']);
  const md = new grpc.Metadata();
  md.set('x-api-key', values['api-key']);
  const call = client.Analyze(md);

  // When each byte offset of the input was sent, to report how long each result took.
  const sentAt: { end: number; at: number }[] = [];
  let sentBytes = 0;
  const bytesPerMs = (rate * channels * 2) / 1000;

  call.on('data', (msg: StepResult) => {
    const line: Record<string, unknown> = { timestamp: msg.timestamp, final: msg.final === true, results: {} };
    for (const m of models) if (msg.results?.[m]) (line['results'] as Record<string, unknown>)[m] = msg.results[m];
    if (values.raw && msg.raw) line['raw'] = Object.fromEntries(models.map((m) => [m, msg.raw![m]?.values]));
    // The step's audio ends at timestamp + period: when was that byte sent?
    const due = (msg.timestamp + periodMs) * bytesPerMs;
    const sent = sentAt.find((s) => s.end >= due);
    if (sent) line['after_audio_ms'] = Math.round(performance.now() - sent.at);
    process.stdout.write(JSON.stringify(line) + '\n');
  });
  call.on('error', (e: grpc.ServiceError) => {
    const code = e.metadata?.get('auris-error-code')[0] ?? grpc.status[e.code];
    process.stderr.write(`stream-mic: error [${String(code)}]: ${e.details}\n`);
    process.exitCode = 1;
  });
  call.on('end', () => client.close());

  call.write({
    config: {
      models,
      output_period: periodMs,
      include_raw_values: values.raw,
      sample_rate: rate,
      encoding: 'PCM_S16LE',
      channels,
      channel: 0,
      stream_id: `mic-${process.pid}`,
    },
  });
  process.stdin.on('data', (chunk: Buffer) => {
    sentBytes += chunk.length;
    sentAt.push({ end: sentBytes, at: performance.now() });
    if (sentAt.length > 10_000) sentAt.splice(0, 5_000);
    // Backpressure: stop reading stdin while grpc-js' buffer is full.
    if (!call.write({ audio: chunk })) {
      process.stdin.pause();
      call.once('drain', () => process.stdin.resume());
    }
  });
  process.stdin.on('end', () => call.end());
  process.once('SIGINT', () => call.end());
}

main();
