/**
 * Helpers of the web console tests: build the console, start the real server (embedded
 * backends, temp DATA_DIR, one API key) on 127.0.0.1:0, generate audio, and drive Debian's
 * Chromium (/usr/bin/chromium, installed by scripts/setup.sh) headless with playwright-core.
 * No browser is ever downloaded.
 */
import { execFileSync } from 'node:child_process';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { defaultConfig } from '../../src/config';
import { createServer, type AurisServer } from '../../src/http/server';
import type { Backends } from '../../src/jobs/types';

export const ROOT = resolve(__dirname, '..', '..', '..');
export const OUT_DIR = join(ROOT, 'test', 'out');
export const CHROMIUM = '/usr/bin/chromium';
export const KEY = 'console-test-key-0001';

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

/** Why the browser tests cannot run here, or false when they can (like the NATS tests without nats-server). */
export function chromiumUnavailable(): string | false {
  return existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: scripts/setup.sh installs the Debian package chromium`;
}

/** Builds web/dist (node web/build.mjs), so the test runs against the current sources. */
export function buildConsole(): void {
  execFileSync(process.execPath, [join(ROOT, 'web', 'build.mjs')], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 });
}

export function tempDir(prefix: string): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** The real server on 127.0.0.1:0: embedded backends under dataDir, or the given ones (NATS). */
export async function startServer(dataDir: string, backends?: Backends): Promise<AurisServer> {
  const config = defaultConfig({
    host: '127.0.0.1',
    port: 0,
    grpcPort: 0,
    dataDir,
    concurrency: 1,
    apiKeys: [{ key: KEY, organizationId: 'org-console', projectId: 'proj-console' }],
    download: { urlAllowlist: ['127.0.0.1'] }, // the URL test's file host listens on 127.0.0.1 (SSRF allowlist)
    logLevel: 'silent',
  });
  const server = await createServer({ config, logger: false, ...(backends ? { backends } : {}) });
  await server.listen();
  return server;
}

/** fetch against the server with the test key. */
export function api(server: AurisServer) {
  return (path: string, init: RequestInit = {}): Promise<Response> => {
    const headers = new Headers(init.headers);
    headers.set('x-api-key', KEY);
    return fetch(server.url + path, { ...init, headers });
  };
}

/**
 * A speech-then-silence WAV (16 kHz mono 16-bit): espeak-ng speaks a sentence (about 5 s),
 * then 2.5 s of digital silence. Returns its path.
 */
export function speechThenSilence(dir: string): string {
  const speech = join(dir, 'speech-raw.wav');
  const out = join(dir, 'speech-then-silence.wav');
  execFileSync('espeak-ng', ['-w', speech, 'Hello, this is a short test of the audio analysis console. It should be detected as speech.'], { timeout: 30_000 });
  execFileSync('sox', [speech, '-r', '16000', '-b', '16', '-c', '1', out, 'pad', '0', '2.5'], { timeout: 30_000 });
  return out;
}

/**
 * A WAV cut inside its header (before the audio): the job fails with CORRUPT_AUDIO. (A WAV cut
 * inside its audio is analysed up to the cut, with warning TRUNCATED_AUDIO.)
 */
export function truncatedWav(from: string, dir: string): string {
  const out = join(dir, 'truncated.wav');
  writeFileSync(out, readFileSync(from).subarray(0, 30));
  return out;
}

/** Chromium with a fresh user-data-dir (removed by close()). */
export async function launchBrowser(extraArgs: readonly string[] = []): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup.sh (Debian package chromium)`);
  const profile = tempDir('auris-chromium-');
  const context = await chromium.launchPersistentContext(profile.path, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_ARGS, ...extraArgs],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
    timeout: 60_000,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      profile.cleanup();
    },
  };
}

export function outPath(name: string): string {
  mkdirSync(OUT_DIR, { recursive: true });
  return join(OUT_DIR, name);
}

/** A loopback HTTP server of one file (the URL method's source). */
export async function serveFile(path: string, contentType = 'audio/wav'): Promise<{ url: string; close(): Promise<void> }> {
  const body = readFileSync(path);
  const srv: Server = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    res.end(body);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/speech-then-silence.wav`,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}

/** A new page of the console at `url` (no trailing slash), signed in with `key`; page errors are collected in `problems`. */
export async function openConsolePage(context: BrowserContext, url: string, key: string, timeoutMs: number): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  page.setDefaultTimeout(timeoutMs);
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(url + '/');
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Use key' }).click();
  await page.locator('#key-status.ok').waitFor();
  return { page, problems };
}
