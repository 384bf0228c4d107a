/**
 * `auris stream <file> [--realtime] [--transport ws|grpc]`: sends an audio file to the
 * streaming service as a live stream (raw PCM in chunks, through the typed client of
 * src/client/stream.ts) and prints each time step as one JSON line as it arrives.
 */
import { AurisError } from '../errors';
import {
  checkSpeakerCounts,
  DEFAULT_VOLUME_THRESHOLD_DB,
  parseChannel,
  parseModelList,
  parseOutputPeriod,
  parseSpeakerCount,
  parseVolumeThreshold,
  SPEAKER_COUNT_LIMIT,
} from '../analysis/options';
import { streamFile, type FileStreamOptions } from '../client/file';
import { StreamClientError, type StreamTarget } from '../client/stream';
import { createClient, listModels } from '../grpc/client';
import { SUPPORTED_FORMATS_TEXT } from '../audio/formats';
import { explainGrpcError } from './grpc-errors';
import { audioSourceOf, DEFAULT_GRPC_PORT, DEFAULT_URL, formatError, grpcAddress, parseCommand, renamedOption, restUrl, speechFirst, type Parsed } from './util';

export const summary = 'send an audio file as a live stream (gRPC or WebSocket), print each step as a JSON line';

const HELP = `usage: auris stream <file|-> [options]

Sends an audio file (${SUPPORTED_FORMATS_TEXT}; up to 10 minutes; '-' reads stdin) to the auris
streaming service (auris serve) as a live stream, over gRPC or the WebSocket, and prints each
time step as one JSON line (timestamp, final, results, raw) as soon as it arrives: with
--results all (the default) a step's provisional results ("final": false: speech 64 ms after the
step, then every model) may come before its final one ("final": true); keep the latest line per
timestamp. --results final prints finals only. With --summary,
a line {"summary": {...}}; with --transitions, a line {"transitions": {...}}. The samples are
sent at the file's own rate and channel count.

options:
  --transport <grpc|ws>     gRPC Analyze on the gRPC port (default) or the WebSocket GET /stream on the REST port
  --url <http://host:port>  the service's REST (and WebSocket) base URL (default $AURIS_URL or ${DEFAULT_URL})
  --grpc <host:port>        gRPC address (default $AURIS_GRPC_ADDRESS, else --url's host on port ${DEFAULT_GRPC_PORT})
  --api-key <key>           API key, sent as x-api-key (default $AURIS_API_KEY)
  --models <list>           comma-separated model names (default: every model the server has): speech, arousal,
                            gender, emotions, speakers (who speaks when: speaker_1, speaker_2, ...)
  --output-period <ms>      time-step length, a positive multiple of 64 (default 1024)
  --channel <n>             channel to analyse (0-based, default 0)
  --raw                     add raw class probabilities (include_raw_values)
  --summary                 end with the per-model summary (include_summary)
  --transitions             end with the per-model transitions (include_transitions)
  --results <all|final>     provisional and final step results (default all), or finals only
  --volume-threshold <dB>   silence gate in dBFS, -120..0 (default ${DEFAULT_VOLUME_THRESHOLD_DB})
  --num-speakers <n>        speakers model: the number of speakers when known, 1..${SPEAKER_COUNT_LIMIT} (never more in the stream;
                            2, a two-party call, re-clusters the recent voice: far fewer errors)
  --max-speakers <n>        speakers model: at most this many speakers, 1..${SPEAKER_COUNT_LIMIT}
  --realtime                send the audio at its real pace, like a live source
  --chunk-ms <ms>           audio per message, ms (default 100)
  --encoding <e>            s16le or f32le (default f32le: the decoded samples, lossless)
  --stream-id <id>          client stream id (echoed by the server)
  -h, --help                this help

exit status: 0 ok, 1 stream error (message and code on stderr), 2 usage error.`;

const VALUE_OPTIONS = [
  '--transport', '--url', '--grpc', '--api-key', '--models', '--output-period', '--channel', '--volume-threshold',
  '--num-speakers', '--max-speakers', '--chunk-ms', '--encoding', '--stream-id', '--results',
];

const OPTIONS = {
  transport: { type: 'string', default: 'grpc' },
  url: { type: 'string' },
  grpc: { type: 'string' },
  'api-key': { type: 'string' },
  models: { type: 'string' },
  'output-period': { type: 'string', default: '1024' },
  channel: { type: 'string' },
  raw: { type: 'boolean', default: false },
  summary: { type: 'boolean', default: false },
  transitions: { type: 'boolean', default: false },
  'volume-threshold': { type: 'string' },
  'num-speakers': { type: 'string' },
  'max-speakers': { type: 'string' },
  realtime: { type: 'boolean', default: false },
  'chunk-ms': { type: 'string', default: '100' },
  encoding: { type: 'string', default: 'f32le' },
  'stream-id': { type: 'string' },
  results: { type: 'string', default: 'all' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;
type Values = Parsed<typeof OPTIONS>['values'];

export async function run(argv: string[]): Promise<number> {
  const renamed = renamedOption(argv, { '--server': '--grpc <host:port> (the gRPC address; --url is the REST URL)' });
  if (renamed) {
    process.stderr.write(`auris stream: ${renamed}\n`);
    return 2;
  }
  const parsed = parseCommand('stream', argv, OPTIONS, HELP, VALUE_OPTIONS);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length !== 1) {
    process.stderr.write(`auris stream: ${positionals.length === 0 ? 'missing <file>' : `one file at a time, got ${positionals.length}`}\n\n${HELP}\n`);
    return 2;
  }
  const usage = usageProblem(values);
  if (usage) {
    process.stderr.write(`auris stream: ${usage}\n`);
    return 2;
  }
  const transport = values.transport as 'grpc' | 'ws';
  const apiKey = values['api-key'] ?? process.env['AURIS_API_KEY'];
  const url = restUrl(values.url);
  const address = grpcAddress(values.grpc, url);
  try {
    const options = streamOptions(values); // parameter errors before any audio is read
    if (apiKey === undefined) throw new AurisError('INVALID_ARGUMENT', 'an API key is required: --api-key or $AURIS_API_KEY');
    const source = await audioSourceOf(positionals[0]!);
    const models = values.models !== undefined ? parseModelList(values.models) : await defaultModels(transport, url, address, apiKey);
    checkSpeakerCounts(models, options.numSpeakers, options.maxSpeakers);
    const target: StreamTarget = transport === 'ws' ? { transport, url, apiKey } : { transport, address, apiKey };
    const stream = await streamFile(target, source, { ...options, models });
    for await (const m of stream) {
      if (m.type === 'step') {
        const { timestamp, ...rest } = m.step;
        process.stdout.write(JSON.stringify({ timestamp, final: m.final, ...rest }) + '\n');
      }
      else if (m.type === 'summary') process.stdout.write(JSON.stringify({ summary: m.summary }) + '\n');
      else process.stdout.write(JSON.stringify({ transitions: m.transitions }) + '\n');
    }
    return 0;
  } catch (e) {
    process.stderr.write(formatError(transport === 'grpc' ? explainGrpcError(e, address) : e) + '\n');
    return 1;
  }
}

/** A usage error in the options the client itself interprets (exit status 2), or null. */
function usageProblem(values: Values): string | null {
  if (values.encoding !== 's16le' && values.encoding !== 'f32le') return '--encoding must be s16le or f32le';
  if (values.transport !== 'grpc' && values.transport !== 'ws') return '--transport must be grpc or ws';
  if (values.results !== 'all' && values.results !== 'final') return '--results must be all or final';
  const chunkMs = Number(values['chunk-ms']);
  if (!(chunkMs > 0 && chunkMs <= 60_000)) return '--chunk-ms must be a number of ms in (0, 60000]';
  return null;
}

/** The stream's parameters, checked by the same rules as the server's (AurisError INVALID_ARGUMENT). */
function streamOptions(values: Values): Omit<FileStreamOptions, 'models'> {
  const outputPeriodMs = parseOutputPeriod(values['output-period']!);
  const channel = parseChannel(values.channel) ?? 0;
  const volumeThreshold = values['volume-threshold'] !== undefined ? parseVolumeThreshold(values['volume-threshold']) : undefined;
  const numSpeakers = parseSpeakerCount('num_speakers', values['num-speakers']);
  const maxSpeakers = parseSpeakerCount('max_speakers', values['max-speakers']);
  return {
    outputPeriodMs,
    encoding: values.encoding as 's16le' | 'f32le',
    chunkMs: Number(values['chunk-ms']),
    realtime: values.realtime === true,
    channel,
    includeRaw: values.raw === true,
    includeSummary: values.summary === true,
    includeTransitions: values.transitions === true,
    results: values.results as 'all' | 'final',
    ...(volumeThreshold !== undefined ? { volumeThreshold } : {}),
    ...(numSpeakers !== undefined ? { numSpeakers } : {}),
    ...(maxSpeakers !== undefined ? { maxSpeakers } : {}),
    ...(values['stream-id'] !== undefined ? { streamId: values['stream-id'] } : {}),
  };
}

/** Every installed model, speech first (gRPC ListModels, or GET /models on the REST port). */
async function defaultModels(transport: 'grpc' | 'ws', url: string, address: string, apiKey: string): Promise<string[]> {
  let names: string[];
  if (transport === 'ws') {
    const res = await fetch(`${url.replace(/\/$/, '')}/models`, { headers: { 'x-api-key': apiKey } });
    if (!res.ok) throw new StreamClientError('UNAVAILABLE', `GET /models answered ${res.status}`);
    names = ((await res.json()) as { models: Array<{ name: string }> }).models.map((m) => m.name);
  } else {
    const client = createClient(address);
    try {
      names = (await listModels(client, apiKey)).models.map((m) => m.name);
    } catch (e) {
      const se = e as { code?: number; details?: string; metadata?: { get(k: string): unknown[] } };
      throw new StreamClientError(String(se.metadata?.get('auris-error-code')[0] ?? 'UNAVAILABLE'), se.details ?? String(e));
    } finally {
      client.close();
    }
  }
  return speechFirst(names);
}
