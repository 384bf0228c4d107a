/**
 * Helpers of the WebSocket streaming tests: the whole service (src/app.ts: REST + WebSocket +
 * gRPC over one StreamHub) on free loopback ports with real models, and a raw WebSocket client
 * that records every message and the close code (protocol-level checks).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { strict as assert } from 'node:assert';
import WebSocket from 'ws';
import { startApp, type AurisApp, type StreamingOptions } from '../../src/app';
import { defaultConfig } from '../../src/config';
import { checkStepOrder, type StepMessage } from '../streaming/order';

export const KEY_A = 'ws-test-key-aaaa-0001';
export const KEY_B = 'ws-test-key-bbbb-0002';

export async function startStreamingApp(streaming: StreamingOptions = {}, config: { modelsDir?: string } = {}): Promise<AurisApp & { wsUrl: string; cleanup(): Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-ws-test-'));
  const app = await startApp({
    logger: false,
    config: defaultConfig({
      host: '127.0.0.1',
      port: 0,
      grpcPort: 0,
      dataDir,
      concurrency: 1,
      apiKeys: [
        { key: KEY_A, organizationId: 'org-a', projectId: 'proj-a' },
        { key: KEY_B, organizationId: 'org-b', projectId: 'proj-b' },
      ],
      logLevel: 'silent',
      ...config,
    }),
    streaming: { inferenceThreads: 1, ...streaming },
  });
  return Object.assign(app, {
    wsUrl: app.url.replace(/^http/, 'ws'),
    async cleanup() {
      await app.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  });
}

export interface WsOutcome {
  /** Every JSON message, in order, but the provisional results (without their `final` field: see `provisional`). */
  messages: Array<Record<string, unknown>>;
  /** The provisional step results ("final": false), in order, without `final`. */
  provisional: WsOutcome['steps'];
  /** Time-step results (messages without `type`). */
  steps: Array<{ timestamp: number; results: Record<string, { result: string; confidence: number }>; raw?: Record<string, Record<string, number>> }>;
  closeCode: number;
  closeReason: string;
  error: { code: string; message: string } | undefined;
}

/** Opens GET /stream?<query>, sends `pcm` in the given chunk sizes, then {"type":"end"} (unless end is false), and records everything until the close. */
export async function wsStream(
  wsUrl: string,
  query: Record<string, string>,
  pcm: Buffer = Buffer.alloc(0),
  opts: { chunks?: number[]; apiKey?: string | null; end?: boolean } = {},
): Promise<WsOutcome> {
  const headers: Record<string, string> = opts.apiKey === null ? {} : { 'x-api-key': opts.apiKey ?? KEY_A };
  const ws = new WebSocket(`${wsUrl}/stream?${new URLSearchParams(query)}`, { headers });
  const messages: Array<Record<string, unknown>> = [];
  ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString('utf8')) as Record<string, unknown>));
  const closed = new Promise<[number, string]>((resolve) => ws.on('close', (c, r) => resolve([c, r.toString()])));
  ws.on('error', () => undefined);
  await new Promise<void>((resolve) => {
    ws.once('open', () => resolve());
    ws.once('close', () => resolve());
  });
  if (ws.readyState === WebSocket.OPEN) {
    let off = 0;
    for (const n of opts.chunks ?? (pcm.length > 0 ? [pcm.length] : [])) {
      if (ws.readyState !== WebSocket.OPEN) break;
      await new Promise<void>((resolve) => ws.send(pcm.subarray(off, off + n), { binary: true }, () => resolve()));
      off += n;
    }
    if (opts.end !== false && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'end' }));
  }
  const [closeCode, closeReason] = await closed;
  const error = messages.find((m) => m.type === 'error') as WsOutcome['error'];
  const { finals, provisional } = splitProvisional(messages);
  return { messages: finals, provisional, steps: finals.filter((m) => m.type === undefined) as unknown as WsOutcome['steps'], closeCode, closeReason, error };
}

/**
 * Checks the protocol of step messages (test/streaming/order.ts) and splits them: every step
 * message has a boolean `final`, a provisional one holds only timestamp, results and raw. Returns
 * the messages without the provisionals and the provisionals, both without `final`.
 */
export function splitProvisional(messages: Array<Record<string, unknown>>): { finals: Array<Record<string, unknown>>; provisional: WsOutcome['steps'] } {
  const finals: Array<Record<string, unknown>> = [];
  const provisional: WsOutcome['steps'] = [];
  const steps: StepMessage[] = [];
  for (const m of messages) {
    if (m.type !== undefined) {
      finals.push(m);
      continue;
    }
    const { final, ...step } = m;
    assert.equal(typeof final, 'boolean', `step message without a boolean final: ${JSON.stringify(m)}`);
    steps.push({ timestamp: step.timestamp as number, final: final as boolean, results: step.results as StepMessage['results'] });
    if (final) {
      finals.push(step);
    } else {
      assert.equal(Object.keys(step).filter((k) => k !== 'timestamp' && k !== 'results' && k !== 'raw').length, 0, `provisional with more than results: ${JSON.stringify(m)}`);
      provisional.push(step as unknown as WsOutcome['steps'][number]);
    }
  }
  checkStepOrder(steps);
  return { finals, provisional };
}
