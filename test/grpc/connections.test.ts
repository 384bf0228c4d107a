/**
 * Connections to the gRPC port (src/grpc/connections.ts, docs/reliability.md): silent TCP
 * connections (no HTTP/2 preface, no key) from one address must not use up the descriptors of
 * the process. `auris serve` runs as a child with its open-file limit lowered to 256 (bash
 * `ulimit -n`), so 300 silent connections from 127.0.0.2 would exhaust it; then REST and gRPC
 * calls from 127.0.0.1 must still be served, and the silent connections are closed by the server.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as http2 from 'node:http2';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createClient, listModels } from '../../src/grpc/client';
import { GrpcConnectionGate } from '../../src/grpc/connections';
import { DEFAULT_CONNECTION_WINDOW_BYTES } from '../../src/grpc/server';
import { API_KEY, startServer } from './helpers';
import { fakeWav, KEY_A, tempDir, waitFor } from '../http/helpers';

const CLI = join(__dirname, '../../src/cli/main.js');
const SILENT = 300;

/** A TCP connection from `localAddress` that sends nothing; resolves once connected. */
function silentConnection(port: number, localAddress: string): Promise<{ socket: Socket; closed: () => boolean }> {
  return new Promise((resolve) => {
    let closed = false;
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.on('error', () => undefined); // a reset is what the server may do
    socket.resume(); // read (and drop) what the server sends, so its close is seen
    socket.on('close', () => (closed = true));
    socket.once('connect', () => resolve({ socket, closed: () => closed }));
    socket.once('close', () => resolve({ socket, closed: () => true }));
  });
}

describe('gRPC connections: caps and handshake timeout (child with 256 descriptors)', () => {
  const dir = tempDir('auris-grpc-conn-');
  let child: ChildProcess;
  let out = '';
  let url = '';
  let grpcPort = 0;
  const sockets: Array<{ socket: Socket; closed: () => boolean }> = [];

  before(async () => {
    const args = [CLI, 'serve', '--data-dir', join(dir.path, 'data'), '--port', '0', '--grpc-port', '0', '--host', '127.0.0.1', '--concurrency', '1'];
    child = spawn('bash', ['-c', 'ulimit -n 256 && exec "$0" "$@"', process.execPath, ...args], {
      env: { ...process.env, API_KEYS: `${KEY_A}:org-a:proj-a`, LOG_LEVEL: 'info', GRPC_HANDSHAKE_TIMEOUT_MS: '2000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    url = await waitFor(() => /"url":"(http:\/\/[^"]+)"/.exec(out)?.[1], 90_000, 'auris serving');
    grpcPort = Number(await waitFor(() => /"port":(\d+),"service":"audioanalysis/.exec(out)?.[1], 30_000, 'gRPC serving'));
  });
  after(() => {
    for (const s of sockets) s.socket.destroy();
    child.kill('SIGKILL');
    dir.cleanup();
  });

  it('300 silent connections from 127.0.0.2 leave REST and gRPC served for 127.0.0.1, and are all closed by the server', async () => {
    for (let i = 0; i < SILENT; i++) sockets.push(await silentConnection(grpcPort, '127.0.0.2'));

    const health = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(20_000) });
    assert.equal(health.status, 200);
    const created = await fetch(`${url}/file-processing/jobs?models=speech&output_period=1024`, {
      method: 'POST',
      headers: { 'x-api-key': KEY_A, 'content-type': 'audio/wav' },
      body: fakeWav(20_000),
      signal: AbortSignal.timeout(20_000),
    });
    assert.equal(created.status, 201, await created.clone().text());
    const client = createClient(`127.0.0.1:${grpcPort}`);
    try {
      const models = await listModels(client, KEY_A);
      assert.ok(models.models.some((m) => m.name === 'speech'));
    } finally {
      client.close();
    }
    // The silent ones are closed by the server (cap or handshake timeout), none left open.
    await waitFor(() => sockets.every((s) => s.closed()), 30_000, 'every silent connection closed by the server');
    assert.equal(child.exitCode, null, 'the server is still running');
  });
});

describe('GrpcConnectionGate', () => {
  let gate: GrpcConnectionGate;
  let port = 0;
  const injected: Socket[] = [];
  before(async () => {
    gate = new GrpcConnectionGate({ maxConnections: 4, maxConnectionsPerAddress: 3, handshakeTimeoutMs: 60_000 }, (s) => { injected.push(s); s.resume(); }, { warn: () => undefined });
    port = await gate.listen('127.0.0.1', 0);
  });
  after(() => {
    for (const s of injected) s.destroy();
    gate.close();
  });

  it('caps one address, then makes room in the total by closing the oldest silent connection; a connection that sent the preface stays', async () => {
    const a: Array<{ socket: Socket; closed: () => boolean }> = [];
    for (let i = 0; i < 4; i++) a.push(await silentConnection(port, '127.0.0.2'));
    await waitFor(() => a[3]!.closed(), 10_000, 'the 4th connection of one address refused');
    assert.deepEqual(a.slice(0, 3).map((s) => s.closed()), [false, false, false]);
    const talker = await silentConnection(port, '127.0.0.3');
    talker.socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    await waitFor(() => gate.stats().open === 4, 10_000, '4 open');
    await waitFor(() => injected.length === 4 && injected[3]!.bytesRead >= 24, 10_000, 'preface read');
    const late = await silentConnection(port, '127.0.0.4');
    await waitFor(() => a[0]!.closed(), 10_000, 'the oldest silent connection evicted');
    assert.equal(late.closed(), false);
    assert.equal(talker.closed(), false);
    assert.equal(gate.stats().open, 4);
    const stats = gate.stats();
    assert.equal(stats.refused, 1);
    assert.equal(stats.silentClosed, 1);
    for (const s of [...a, talker, late]) s.socket.destroy();
  });
});

/** The connection-level window the server grants a new HTTP/2 client, once its window update has arrived. */
async function grantedConnectionWindow(port: number): Promise<number> {
  const session = http2.connect(`http://127.0.0.1:${port}`);
  session.on('error', () => undefined);
  try {
    await new Promise<void>((resolve, reject) => {
      session.once('remoteSettings', () => resolve());
      session.once('error', reject);
    });
    // The window update follows the server's settings; a ping's answer comes after both.
    await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
    return session.state.remoteWindowSize ?? NaN;
  } finally {
    session.destroy();
  }
}

describe('gRPC connections: flow-control window (docs/streaming.md "Flow control")', () => {
  it("a connection's streams share a 16 MiB receive window by default, so a pause of the server does not stop 40 clients' audio within 50 ms; configurable, and 64 KiB is HTTP/2's own", async () => {
    const wide = await startServer();
    const narrow = await startServer({ connectionWindowBytes: 65_535 });
    try {
      assert.equal(await grantedConnectionWindow(wide.port), DEFAULT_CONNECTION_WINDOW_BYTES);
      assert.equal(await grantedConnectionWindow(narrow.port), 65_535);
      // Streams on the wide connection work as before.
      const models = await listModels(wide.client, API_KEY);
      assert.ok(models.models.some((m) => m.name === 'speech'));
    } finally {
      await wide.close();
      await narrow.close();
    }
  });
});
