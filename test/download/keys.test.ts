/**
 * Signing keys: generated on first start in DATA_DIR (0600, stable kid across restarts),
 * loaded from configuration, rotation keys published, wrong curves refused; the two HTTP
 * forms (/.well-known/jwks.json, /verification-keys) and `auris keys`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { DEFAULT_KEY_FILE, generateKeyPem, KeyError, loadKeyRing, writeKeyFileExclusive } from '../../src/download/keys';
import { DownloadSigner } from '../../src/download/sign';
import { verifyDownloadRequest } from '../../src/download/verify';
import { defaultConfig, loadConfig, ConfigError } from '../../src/config';
import { startServer } from '../http/helpers';
import { FakeAnalyzer } from '../http/helpers';
import { tempDir, verifyWithNodeCrypto } from './helpers';

const run = promisify(execFile);
const MAIN = resolve(__dirname, '..', '..', 'src', 'cli', 'main.js');

describe('signing keys', () => {
  it('generated on first start: P-521, mode 0600 in a 0700 directory, the same key (kid) on the next start', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const first = await loadKeyRing({ dataDir: dir.path });
    const file = join(dir.path, DEFAULT_KEY_FILE);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir.path, 'keys')).mode & 0o777, 0o700);
    assert.match(readFileSync(file, 'utf8'), /BEGIN PRIVATE KEY/);
    assert.equal(first.signing.privateKey.asymmetricKeyDetails?.namedCurve, 'secp521r1');
    assert.match(first.signing.kid, /^[A-Za-z0-9_-]{43}$/, 'RFC 7638 SHA-256 thumbprint');
    const second = await loadKeyRing({ dataDir: dir.path });
    assert.equal(second.signing.kid, first.signing.kid);
    // loose permissions on our own file are tightened
    chmodSync(file, 0o644);
    await loadKeyRing({ dataDir: dir.path });
    assert.equal(statSync(file).mode & 0o777, 0o600);
  });

  it('two processes starting at once agree on one key', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const rings = await Promise.all(Array.from({ length: 4 }, () => loadKeyRing({ dataDir: dir.path })));
    assert.equal(new Set(rings.map((r) => r.signing.kid)).size, 1);
  });

  it('configured signing key and rotation keys: one signs, all are published', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const next = join(dir.path, 'next.pem');
    const old = join(dir.path, 'old.pem');
    assert.equal(await writeKeyFileExclusive(next, generateKeyPem()), true);
    assert.equal(await writeKeyFileExclusive(next, generateKeyPem()), false, 'never overwrites');
    await writeKeyFileExclusive(old, generateKeyPem());
    // a public-only PEM is fine for a published key
    const oldRing = await loadKeyRing({ dataDir: dir.path, signingKeyFile: old });
    const oldPub = join(dir.path, 'old.pub.pem');
    writeFileSync(oldPub, oldRing.signing.publicKey.export({ type: 'spki', format: 'pem' }));
    const ring = await loadKeyRing({ dataDir: dir.path, signingKeyFile: next, verificationKeyFiles: [oldPub, next] });
    assert.equal(existsSync(join(dir.path, DEFAULT_KEY_FILE)), false, 'no key generated when one is configured');
    assert.deepEqual(
      ring.verificationKeys().map((k) => [k.kid, k.signing]),
      [
        [ring.signing.kid, true],
        [oldRing.signing.kid, false],
      ],
    );
    assert.deepEqual(ring.jwks().keys.map((k) => [k.kty, k.crv, k.alg, k.use, k.kid]), [
      ['EC', 'P-521', 'ES512', 'sig', ring.signing.kid],
      ['EC', 'P-521', 'ES512', 'sig', oldRing.signing.kid],
    ]);
    // a token of the old key still verifies against the published set
    const token = await new DownloadSigner(oldRing).sign({ organizationId: 'o', projectId: 'p', jobId: 'j', url: 'https://f/x' });
    await verifyDownloadRequest({ 'x-service-request-verification': token }, { jwks: ring.jwks(), organizationId: 'o', projectId: 'p', expectedUrl: 'https://f/x', seenJti: new Set() });
  });

  it('refuses keys that are not EC P-521 and unreadable files', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const p256 = join(dir.path, 'p256.pem');
    writeFileSync(p256, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    const rsa = join(dir.path, 'rsa.pem');
    writeFileSync(rsa, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    await assert.rejects(loadKeyRing({ dataDir: dir.path, signingKeyFile: p256 }), (e: Error) => e instanceof KeyError && /P-521/.test(e.message) && /prime256v1/.test(e.message));
    await assert.rejects(loadKeyRing({ dataDir: dir.path, signingKeyFile: rsa }), /P-521/);
    await assert.rejects(loadKeyRing({ dataDir: dir.path, verificationKeyFiles: [p256] }), /P-521/);
    await assert.rejects(loadKeyRing({ dataDir: dir.path, signingKeyFile: join(dir.path, 'missing.pem') }), /cannot read/);
  });
});

describe('configuration', () => {
  it('defaults and overrides of the download settings', () => {
    const d = defaultConfig().download;
    assert.deepEqual(d, { verificationKeyFiles: [], tokenTtlSec: 300, connectTimeoutMs: 10_000, urlAllowlist: [] });
    assert.equal(defaultConfig().limits.maxDownloadBytes, 1024 * 1024 * 1024);
    const c = loadConfig(['--url-allowlist', '10.0.0.0/8, files.corp', '--download-token-ttl=60'], {
      SIGNING_KEY_FILE: '/k.pem',
      VERIFICATION_KEY_FILES: '/a.pem,/b.pem',
      DOWNLOAD_CONNECT_TIMEOUT_MS: '2500',
    });
    assert.deepEqual(c.download, { signingKeyFile: '/k.pem', verificationKeyFiles: ['/a.pem', '/b.pem'], tokenTtlSec: 60, connectTimeoutMs: 2500, urlAllowlist: ['10.0.0.0/8', 'files.corp'] });
    assert.throws(() => loadConfig([], { URL_ALLOWLIST: '10.0.0.0/40' }), ConfigError);
    assert.throws(() => loadConfig([], { DOWNLOAD_TOKEN_TTL_SECONDS: '0' }), ConfigError);
  });
});

describe('published keys over HTTP and `auris keys`', () => {
  it('GET /.well-known/jwks.json and GET /verification-keys list the same keys; a signed token verifies with both', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const server = await startServer(dir.path, { analyzer: new FakeAnalyzer(), startWorker: false });
    t.after(() => server.close());
    const jwksRes = await fetch(`${server.url}/.well-known/jwks.json`);
    assert.equal(jwksRes.status, 200);
    assert.match(jwksRes.headers.get('cache-control') ?? '', /max-age/);
    const jwks = (await jwksRes.json()) as { keys: Array<Record<string, string>> };
    const vk = (await (await fetch(`${server.url}/verification-keys`)).json()) as { keys: Array<{ kid: string; alg: string; public_key: string; signing: boolean }> };
    assert.equal(jwks.keys.length, 1);
    assert.deepEqual(Object.keys(jwks.keys[0]!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    assert.equal(vk.keys[0]!.kid, jwks.keys[0]!.kid);
    assert.equal(vk.keys[0]!.alg, 'ES512');
    assert.equal(vk.keys[0]!.signing, true);
    // the key file was generated in DATA_DIR on start
    assert.equal(statSync(join(dir.path, DEFAULT_KEY_FILE)).mode & 0o777, 0o600);
    // both forms verify a token of the server's signer
    const ring = await loadKeyRing({ dataDir: dir.path });
    assert.equal(ring.signing.kid, vk.keys[0]!.kid);
    const token = await new DownloadSigner(ring).sign({ organizationId: 'o', projectId: 'p', jobId: 'j', url: 'https://f/x' });
    verifyWithNodeCrypto(token, vk.keys[0]!.public_key);
    await verifyDownloadRequest({ 'x-service-request-verification': token }, { jwks: jwks as never, organizationId: 'o', projectId: 'p', expectedUrl: 'https://f/x', seenJti: new Set() });
    // documented in the OpenAPI document
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    assert.ok(doc.paths['/.well-known/jwks.json'] && doc.paths['/verification-keys']);
  });

  it('auris keys prints the key id and base64 DER (also as JSON, JWKS, PEM); generate writes a 0600 key', async (t) => {
    const dir = tempDir('auris-keys-');
    t.after(() => dir.cleanup());
    const env = { PATH: process.env.PATH ?? '', DATA_DIR: dir.path };
    const text = await run(process.execPath, [MAIN, 'keys'], { env });
    const ring = await loadKeyRing({ dataDir: dir.path });
    const der = ring.verificationKeys()[0]!.public_key;
    assert.match(text.stdout, new RegExp(`kid: ${ring.signing.kid}`));
    assert.ok(text.stdout.includes(`public_key (base64 DER, SPKI): ${der}`));
    const json = JSON.parse((await run(process.execPath, [MAIN, 'keys', '--format', 'json'], { env })).stdout) as { keys: unknown[] };
    assert.deepEqual(json, { keys: ring.verificationKeys() });
    const jwks = JSON.parse((await run(process.execPath, [MAIN, 'keys', '--format=jwks', '--data-dir', dir.path], { env: { PATH: env.PATH } })).stdout) as unknown;
    assert.deepEqual(jwks, ring.jwks());
    const pem = (await run(process.execPath, [MAIN, 'keys', '--format', 'pem'], { env })).stdout;
    assert.match(pem, /# kid: .* \(signing\)\n-----BEGIN PUBLIC KEY-----/);

    const out = join(dir.path, 'next.pem');
    const gen = await run(process.execPath, [MAIN, 'keys', 'generate', out], { env });
    assert.match(gen.stdout, /kid: [A-Za-z0-9_-]{43}/);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    await assert.rejects(run(process.execPath, [MAIN, 'keys', 'generate', out], { env }), /already exists/);
    const both = await run(process.execPath, [MAIN, 'keys', '--format', 'json'], { env: { ...env, VERIFICATION_KEY_FILES: out } });
    assert.equal((JSON.parse(both.stdout) as { keys: unknown[] }).keys.length, 2);
    await assert.rejects(run(process.execPath, [MAIN, 'keys', '--format', 'xml'], { env }), /--format/);
  });
});
