/**
 * The service is no oracle of the network behind it (docs/reliability.md, docs/download.md):
 * callbacks to literal private or metadata addresses are refused at creation; download
 * failures say "not allowed", "could not be reached" or the HTTP status, never the address a
 * name resolves to nor the socket error (closed port and non-HTTP service look the same),
 * while the server log keeps the detail; allowlist entries may name a port.
 */
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { AurisServer } from '../../src/http/server';
import { createJob, FakeAnalyzer, type JobJson, KEY_A, startServer, tempDir, waitForJob } from '../http/helpers';

async function listen(server: Server | ReturnType<typeof createTcpServer>): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

/** A port with nothing listening (bound, then released). */
async function closedPort(): Promise<number> {
  const s = createTcpServer();
  const port = await listen(s);
  await new Promise((r) => s.close(r));
  return port;
}

const resolver = async (h: string) => {
  if (h === 'no-such-name.test') throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${h}`), { code: 'ENOTFOUND' });
  return h === 'private.test' ? [{ address: '10.9.9.9', family: 4 as const }] : [{ address: '127.0.0.1', family: 4 as const }];
};
const LEAKS = /ECONN|EHOST|ENOTFOUND|EAI_|HPE_|10\.9\.9\.9|127\.0\.0\.1|socket|parse/i;

describe('callbacks refused at creation', () => {
  const dir = tempDir('auris-oracle-cb-');
  let server: AurisServer;
  before(async () => {
    // Nothing is processed: no callback is ever sent by this server.
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { concurrency: 0 } });
  });
  after(async () => {
    await server.close();
    dir.cleanup();
  });

  const create = (callback: string): Promise<Response> => createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(callback)}` });

  it('literal metadata, private, loopback (not allowlisted) and localhost callbacks: 400 INVALID_PARAMETER', async () => {
    for (const cb of [
      'http://169.254.169.254/latest/meta-data/',
      'http://0xa9fea9fe/hook', // 169.254.169.254 in hex
      'http://[::ffff:169.254.169.254]/hook',
      'http://10.0.0.1/hook',
      'http://192.168.1.10:8080/hook',
      'http://127.0.0.2:9000/hook', // the allowlist names 127.0.0.1 only
      'http://[::1]/hook',
      'http://localhost:9/hook',
      'https://[fd00:ec2::254]/hook',
    ]) {
      const res = await create(cb);
      const text = await res.text();
      assert.equal(res.status, 400, `${cb}: ${text}`);
      assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      const p = JSON.parse(text) as { code: string; errors: Array<{ parameter: string }> };
      assert.equal(p.code, 'INVALID_PARAMETER');
      assert.equal(p.errors[0]!.parameter, 'callback');
    }
  });

  it('an allowlisted address and a host name (checked when sent) are accepted', async () => {
    for (const cb of ['http://127.0.0.1:9/hook', 'https://hooks.example.com/auris']) {
      const res = await create(cb);
      assert.equal(res.status, 201, `${cb}: ${await res.text()}`);
    }
  });
});

describe('download failures tell what the caller needs, nothing about the network', () => {
  const dir = tempDir('auris-oracle-dl-');
  let server: AurisServer;
  let web: Server;
  let webPort: number;
  const tcp = createTcpServer((s) => s.end('SSH-2.0-OpenSSH_9.2\r\n'));
  let tcpPort: number;
  const held: Array<import('node:net').Socket> = [];
  const silent = createTcpServer((s) => void held.push(s)); // accepts, never answers
  let silentPort: number;
  const logs: string[] = [];

  before(async () => {
    web = createHttpServer((_req, res) => res.writeHead(404).end('no'));
    webPort = await listen(web);
    tcpPort = await listen(tcp);
    silentPort = await listen(silent);
    server = await startServer(dir.path, {
      analyzer: new FakeAnalyzer(),
      config: { download: { urlAllowlist: ['127.0.0.1'], connectTimeoutMs: 500 } },
      download: { resolver },
      logger: { level: 'warn', stream: { write: (line: string) => void logs.push(line) } },
    });
  });
  after(async () => {
    await server.close();
    web.close();
    tcp.close();
    for (const h of held) h.destroy();
    silent.close();
    dir.cleanup();
  });

  const failed = async (url: string): Promise<{ code: string; message: string }> => {
    const res = await createJob(server, KEY_A, { url });
    assert.equal(res.status, 201, await res.clone().text());
    const job = await waitForJob(server, KEY_A, ((await res.json()) as JobJson).job_id, undefined, 30_000);
    assert.equal(job.status, 'failed');
    return job.error!;
  };

  it('a closed port and a non-HTTP service give the same answer, with no socket error; the log has it', async () => {
    const closed = await failed(`http://127.0.0.1:${await closedPort()}/a.wav`);
    const notHttp = await failed(`http://127.0.0.1:${tcpPort}/a.wav`);
    assert.equal(closed.code, 'DOWNLOAD_FAILED');
    assert.deepEqual(notHttp, closed);
    assert.match(closed.message, /could not be reached/);
    assert.doesNotMatch(closed.message, LEAKS);
    assert.ok(logs.some((l) => /ECONNREFUSED/.test(l)), 'the server log keeps the socket error');
  });

  it('a host that answered HTTP: its status', async () => {
    const e = await failed(`http://127.0.0.1:${webPort}/a.wav`);
    assert.equal(e.code, 'DOWNLOAD_FAILED');
    assert.match(e.message, /HTTP 404/);
  });

  it('a name resolving to a private address, a name that does not resolve, a silent open port: the same answer as a closed port; the log has the address', async () => {
    const e = await failed('http://private.test/a.wav');
    const closed = await failed(`http://127.0.0.1:${await closedPort()}/a.wav`);
    assert.deepEqual(e, closed);
    assert.deepEqual(await failed('http://no-such-name.test/a.wav'), closed);
    assert.deepEqual(await failed(`http://127.0.0.1:${silentPort}/a.wav`), closed);
    assert.doesNotMatch(e.message, LEAKS);
    assert.ok(logs.some((l) => l.includes('private.test resolves to 10.9.9.9')), 'the server log keeps the address');
  });
});

describe('allowlist entries with a port', () => {
  const dir = tempDir('auris-oracle-port-');
  let server: AurisServer;
  let web: Server;
  let webPort: number;

  before(async () => {
    web = createHttpServer((_req, res) => res.writeHead(404).end('no'));
    webPort = await listen(web);
    server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), config: { download: { urlAllowlist: [`127.0.0.1:${webPort}`] } } });
  });
  after(async () => {
    await server.close();
    web.close();
    dir.cleanup();
  });

  it('admit that port only, for downloads and callbacks', async () => {
    const other = await closedPort();
    const allowed = (await (await createJob(server, KEY_A, { url: `http://127.0.0.1:${webPort}/a.wav` })).json()) as JobJson;
    const refused = await createJob(server, KEY_A, { url: `http://127.0.0.1:${other}/a.wav` });
    assert.match((await waitForJob(server, KEY_A, allowed.job_id)).error!.message, /HTTP 404/);
    assert.equal(refused.status, 400, 'an address literal off the allowlist is refused at creation');
    const cb = (port: number): Promise<Response> =>
      createJob(server, KEY_A, { query: `models=speech&output_period=1024&callback=${encodeURIComponent(`http://127.0.0.1:${port}/hook`)}` });
    assert.equal((await cb(other)).status, 400);
    assert.equal((await cb(webPort)).status, 201);
  });
});
