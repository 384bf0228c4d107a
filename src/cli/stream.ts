/**
 * `auris stream <file> [--realtime]`: sends an audio file to the gRPC streaming service as a
 * live stream (raw PCM in chunks) and prints each time step as one JSON line as it arrives.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { decodeAll } from '../audio';
import type { AudioSource } from '../audio/types';
import { AurisError } from '../analysis/errors';
import { DEFAULT_VOLUME_THRESHOLD_DB, parseChannel, parseModelList, parseOutputPeriod, parseVolumeThreshold } from '../analysis/options';
import { createClient, listModels, openAnalyzeStream, stepJson } from '../grpc/client';
import type { StreamConfigMsg } from '../grpc/proto';
import { formatError, parseCommand } from './util';

export const summary = 'send an audio file as a live gRPC stream, print each step as a JSON line';

export const DEFAULT_GRPC_ADDRESS = '127.0.0.1:50051';

const HELP = `usage: auris stream <file|-> [options]

Sends an audio file (WAV, FLAC, MP3, up to 10 minutes; '-' reads stdin) to the auris gRPC
streaming service (auris serve) as a live stream, and prints each time step as one JSON line
(timestamp, results, raw) as soon as it arrives. With --summary, the last line is
{"summary": {...}}. The samples are sent at the file's own rate and channel count.

options:
  --server <host:port>      gRPC address (default $AURIS_GRPC_ADDRESS or ${DEFAULT_GRPC_ADDRESS})
  --api-key <key>           API key, sent as x-api-key (default $AURIS_API_KEY)
  --models <list>           comma-separated model names (default: every model the server has)
  --output-period <ms>      time-step length, a positive multiple of 64 (default 1024)
  --channel <n>             channel to analyse (0-based, default 0)
  --raw                     add raw class probabilities (include_raw_values)
  --summary                 end with the per-model summary (include_summary)
  --volume-threshold <dB>   silence gate in dBFS, -120..0 (default ${DEFAULT_VOLUME_THRESHOLD_DB})
  --realtime                send the audio at its real pace, like a live source
  --chunk-ms <ms>           audio per message, ms (default 100)
  --encoding <e>            s16le or f32le (default f32le: the decoded samples, lossless)
  --stream-id <id>          client stream id (echoed by the server)
  -h, --help                this help

exit status: 0 ok, 1 stream error (message and code on stderr), 2 usage error.`;

const VALUE_OPTIONS = ['--server', '--api-key', '--models', '--output-period', '--channel', '--volume-threshold', '--chunk-ms', '--encoding', '--stream-id'];

/** Error with the auris code the server put in the trailers (or the gRPC status name). */
class StreamError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

async function readStdin(): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of process.stdin) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** Interleaved float32 -> little-endian bytes in the requested encoding. */
export function encodePcm(samples: Float32Array, encoding: 's16le' | 'f32le'): Buffer {
  if (encoding === 'f32le') return Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
  const out = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) {
    const v = Math.max(-1, Math.min(1, samples[i]!));
    out.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32768))), i * 2);
  }
  return out;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function run(argv: string[]): Promise<number> {
  const parsed = parseCommand(
    'stream',
    argv,
    {
      server: { type: 'string' },
      'api-key': { type: 'string' },
      models: { type: 'string' },
      'output-period': { type: 'string', default: '1024' },
      channel: { type: 'string' },
      raw: { type: 'boolean', default: false },
      summary: { type: 'boolean', default: false },
      'volume-threshold': { type: 'string' },
      realtime: { type: 'boolean', default: false },
      'chunk-ms': { type: 'string', default: '100' },
      encoding: { type: 'string', default: 'f32le' },
      'stream-id': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    HELP,
    VALUE_OPTIONS,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    process.stderr.write(`auris stream: ${positionals.length === 0 ? 'missing <file>' : `one file at a time, got ${positionals.length}`}\n\n${HELP}\n`);
    return 2;
  }
  const encoding = values.encoding;
  const chunkMs = Number(values['chunk-ms']);
  if (encoding !== 's16le' && encoding !== 'f32le') {
    process.stderr.write(`auris stream: --encoding must be s16le or f32le\n`);
    return 2;
  }
  if (!(chunkMs > 0 && chunkMs <= 60_000)) {
    process.stderr.write(`auris stream: --chunk-ms must be a number of ms in (0, 60000]\n`);
    return 2;
  }

  const address = values.server ?? process.env['AURIS_GRPC_ADDRESS'] ?? DEFAULT_GRPC_ADDRESS;
  const apiKey = values['api-key'] ?? process.env['AURIS_API_KEY'];
  const client = createClient(address);
  try {
    const outputPeriod = parseOutputPeriod(values['output-period']!);
    const channel = parseChannel(values.channel) ?? 0;
    const volumeThreshold = values['volume-threshold'] !== undefined ? parseVolumeThreshold(values['volume-threshold']) : undefined;
    if (apiKey === undefined) throw new AurisError('INVALID_ARGUMENT', 'an API key is required: --api-key or $AURIS_API_KEY');
    const file = positionals[0]!;
    const source: AudioSource = file === '-' ? { buffer: await readStdin() } : { path: path.resolve(file) };
    const { info, samples } = await decodeAll(source);

    let models: string[];
    try {
      // Default: every installed model, speech first.
      models =
        values.models !== undefined
          ? parseModelList(values.models)
          : (await listModels(client, apiKey)).models.map((m) => m.name).sort((a, b) => Number(b === 'speech') - Number(a === 'speech'));
    } catch (e) {
      throw toStreamError(e);
    }
    const config: StreamConfigMsg = {
      models,
      output_period: outputPeriod,
      include_raw_values: values.raw === true,
      include_summary: values.summary === true,
      sample_rate: info.sampleRate,
      encoding: encoding === 's16le' ? 'PCM_S16LE' : 'PCM_F32LE',
      channels: info.channels,
      channel,
    };
    if (volumeThreshold !== undefined) config.volume_threshold = volumeThreshold;
    if (values['stream-id'] !== undefined) config.stream_id = values['stream-id'];

    const h = openAnalyzeStream(client, apiKey, config);
    const reading = (async () => {
      for await (const msg of h.call) {
        if (msg.summary) {
          const s: Record<string, Record<string, number>> = {};
          for (const m of models) if (msg.summary.models?.[m]) s[m] = msg.summary.models[m]!.fractions;
          process.stdout.write(JSON.stringify({ summary: s }) + '\n');
        } else {
          process.stdout.write(JSON.stringify(stepJson(msg, models)) + '\n');
        }
      }
    })().catch(() => undefined); // the status carries the error

    const bytes = encodePcm(samples, encoding);
    const frameBytes = info.channels * (encoding === 's16le' ? 2 : 4);
    const chunkFrames = Math.max(1, Math.round((chunkMs / 1000) * info.sampleRate));
    const t0 = performance.now();
    let sentFrames = 0;
    for (let off = 0; off < bytes.length; off += chunkFrames * frameBytes) {
      const piece = bytes.subarray(off, Math.min(bytes.length, off + chunkFrames * frameBytes));
      await h.send(piece);
      sentFrames += piece.length / frameBytes;
      if (values.realtime) {
        const due = t0 + (sentFrames / info.sampleRate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
      }
    }
    h.end();
    const status = await h.status;
    await reading;
    if (status.code !== grpc.status.OK) {
      const code = String(status.metadata?.get('auris-error-code')[0] ?? grpc.status[status.code]);
      throw new StreamError(code, status.details);
    }
    return 0;
  } catch (e) {
    process.stderr.write(formatError(e) + '\n');
    return 1;
  } finally {
    client.close();
  }
}

function toStreamError(e: unknown): unknown {
  const se = e as grpc.ServiceError;
  if (se && typeof se.code === 'number' && se.metadata) {
    return new StreamError(String(se.metadata.get('auris-error-code')[0] ?? grpc.status[se.code]), se.details);
  }
  return e;
}
