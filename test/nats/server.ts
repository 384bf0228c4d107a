/**
 * A real `nats-server -js` for tests: on a free 127.0.0.1 port, with a temporary store
 * directory, stopped (and the directory removed) by close(). stop()/start() keep the port
 * and the store, to test an outage. Everything is killed if the test process exits.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

/** Why NATS tests cannot run here, or false when they can. */
export function natsUnavailable(): string | false {
  try {
    execFileSync('nats-server', ['--version'], { stdio: 'pipe' });
    return false;
  } catch {
    return 'nats-server is not installed (npm run setup installs the Debian package)';
  }
}

export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/**
 * `n` distinct free ports: all held open together before any is released, so the system cannot hand
 * the same port out twice (one after the other it may: a cluster node once got its client port as its
 * route port too, and failed to start).
 */
export async function freePorts(n: number): Promise<number[]> {
  const held = await Promise.all(
    Array.from({ length: n }, () => new Promise<Server>((resolve, reject) => {
      const s = createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve(s));
    })),
  );
  const ports = held.map((s) => (s.address() as { port: number }).port);
  await Promise.all(held.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = new Socket();
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
    sock.connect(port, '127.0.0.1');
  });
}

export class TestNatsServer {
  private proc: ChildProcess | null = null;
  private log = '';

  constructor(
    readonly port: number,
    readonly storeDir: string,
    /** Extra arguments (cluster membership). */
    private readonly extra: string[] = [],
    /** Wait for this line instead of "Server is ready" (a clustered server logs it only once it has peers). */
    private readonly readyLine = 'Server is ready',
  ) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<TestNatsServer> {
    const s = new TestNatsServer(await freePort(), mkdtempSync(join(tmpdir(), 'auris-nats-')));
    await s.start();
    return s;
  }

  /** Starts (again) on the same port and store directory. */
  async start(): Promise<void> {
    if (this.proc) return;
    const proc = spawn('nats-server', ['-js', '-a', '127.0.0.1', '-p', String(this.port), '-sd', this.storeDir, ...this.extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    live.add(proc);
    const append = (d: Buffer): void => {
      this.log = (this.log + d.toString()).slice(-20_000);
    };
    proc.stdout!.on('data', append);
    proc.stderr!.on('data', append);
    proc.once('exit', () => {
      live.delete(proc);
      if (this.proc === proc) this.proc = null;
    });
    const deadline = Date.now() + 15_000;
    while (!(this.log.includes(this.readyLine) && (await canConnect(this.port)))) {
      if (!this.proc) throw new Error(`nats-server exited:\n${this.log}`);
      if (Date.now() > deadline) throw new Error(`nats-server did not start:\n${this.log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    this.log = '';
  }

  /** Stops the server (SIGTERM: a clean shutdown) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.proc;
    if (!proc) return;
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  get logTail(): string {
    return this.log;
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.storeDir, { recursive: true, force: true });
  }
}

/** Three clustered nats-servers with JetStream (replicated streams), each on its own ports and store. */
export class TestNatsCluster {
  private constructor(readonly servers: TestNatsServer[]) {}

  /** All client URLs, comma-separated (the seed list a node is given). */
  get url(): string {
    return this.servers.map((s) => s.url).join(',');
  }

  static async start(size = 3): Promise<TestNatsCluster> {
    const ports = await freePorts(2 * size);
    const clientPorts = ports.slice(0, size);
    const routePorts = ports.slice(size);
    const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
    const servers = clientPorts.map(
      (port, i) =>
        new TestNatsServer(
          port,
          mkdtempSync(join(tmpdir(), `auris-natsc${i}-`)),
          ['--server_name', `n${i}`, '--cluster_name', 'auris-test', '--cluster', `nats://127.0.0.1:${routePorts[i]}`, '--routes', routes],
          'Server is ready',
        ),
    );
    await Promise.all(servers.map((s) => s.start()));
    return new TestNatsCluster(servers);
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.close()));
  }
}
