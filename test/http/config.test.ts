import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, defaultConfig, loadConfig, parseApiKeys, usage } from '../../src/config';
import { ApiKeyRegistry, RateLimiter } from '../../src/http/auth';
import { tempDir } from './helpers';

describe('configuration', () => {
  it('defaults: ports, host, limits of the spec, concurrency, callbacks', () => {
    const c = defaultConfig();
    assert.equal(c.port, 8080);
    assert.equal(c.grpcPort, 50051);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.concurrency, availableParallelism());
    assert.equal(c.limits.maxUploadBytes, 15 * 1024 * 1024);
    assert.equal(c.limits.maxAudioDurationSec, 3600);
    assert.equal(c.limits.maxResultBytes, 30 * 1024 * 1024);
    assert.equal(c.callbacks.timeoutMs, 10_000);
    assert.equal(c.callbacks.retries, 3);
    assert.equal(c.natsUrl, undefined);
    assert.deepEqual(c.apiKeys, []);
  });

  it('env, then flags (both --x v and --x=v) override the defaults', () => {
    const env = { PORT: '9000', DATA_DIR: '/tmp/x', NATS_URL: 'nats://h:4222', MAX_UPLOAD_BYTES: '100', RETENTION_SECONDS: '60', API_KEYS: 'k1234567:o1:p1, k7654321:o2:p2' };
    const c = loadConfig(['--port', '9001', '--concurrency=3'], env);
    assert.equal(c.port, 9001);
    assert.equal(c.concurrency, 3);
    assert.equal(c.dataDir, '/tmp/x');
    assert.equal(c.natsUrl, 'nats://h:4222');
    assert.equal(c.limits.maxUploadBytes, 100);
    assert.equal(c.retentionSec, 60);
    assert.deepEqual(c.apiKeys, [
      { key: 'k1234567', organizationId: 'o1', projectId: 'p1' },
      { key: 'k7654321', organizationId: 'o2', projectId: 'p2' },
    ]);
  });

  it('API_KEYS_FILE is merged with API_KEYS', () => {
    const dir = tempDir();
    try {
      const f = join(dir.path, 'keys');
      writeFileSync(f, '# comment\n\nfilekey1:org:proj\n');
      const c = loadConfig([], { API_KEYS: 'envkey12:o:p', API_KEYS_FILE: f });
      assert.deepEqual(c.apiKeys.map((k) => k.key), ['envkey12', 'filekey1']);
    } finally {
      dir.cleanup();
    }
  });

  it('rejects bad values with a clear message', () => {
    assert.throws(() => loadConfig(['--port', 'x'], {}), ConfigError);
    assert.throws(() => loadConfig(['--nope', '1'], {}), /unknown option --nope/);
    assert.throws(() => loadConfig([], { CONCURRENCY: '-1' }), /CONCURRENCY/);
    assert.throws(() => loadConfig([], { MAX_OUTPUT_PERIOD_MS: '1000' }), /multiple of 64/);
    assert.throws(() => parseApiKeys('onlykey', 'x'), /key:organization_id:project_id/);
    assert.throws(() => parseApiKeys('short:o:p', 'x'), /at least 8/);
    assert.throws(() => loadConfig([], { API_KEYS: 'samekey1:o:p,samekey1:o:q' }), /twice/);
    assert.throws(() => loadConfig([], { API_KEYS_FILE: '/nonexistent/keys' }), /API_KEYS_FILE/);
    assert.match(usage(), /PORT/);
  });

  it('refuses an env value with an inline comment, naming the variable (systemd and docker keep it in the value)', () => {
    assert.throws(() => loadConfig([], { HOST: '127.0.0.1                     # behind the proxy' }), (e: Error) => e instanceof ConfigError && /env HOST/.test(e.message) && /own/.test(e.message));
    assert.throws(() => loadConfig([], { CONCURRENCY: '4\t# jobs at a time' }), /env CONCURRENCY.*inline comment/);
    assert.equal(loadConfig([], { DATA_DIR: '/srv/auris#1' }).dataDir, '/srv/auris#1', 'a # inside a value is not a comment');
  });

  it('the shipped environment files load as systemd reads them (deploy/auris.env, docs/deploy.md\'s /etc/auris.env)', () => {
    const root = join(__dirname, '..', '..', '..');
    const deployDoc = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8');
    const block = /```\n(# \/etc\/auris\.env[^\n]*\n[\s\S]*?)```/.exec(deployDoc)?.[1];
    assert.ok(block, 'docs/deploy.md has the /etc/auris.env block');
    const dir = tempDir();
    try {
      const keys = join(dir.path, 'keys');
      writeFileSync(keys, 'filekey1:org:proj\n');
      for (const [name, text] of [['deploy/auris.env', readFileSync(join(root, 'deploy', 'auris.env'), 'utf8')], ['docs/deploy.md', block]] as const) {
        const env = systemdEnvironmentFile(text);
        assert.ok(Object.keys(env).length >= 5, `${name}: settings read`);
        assert.equal(env['MALLOC_ARENA_MAX'], '2', `${name}: MALLOC_ARENA_MAX`);
        const c = loadConfig([], { ...env, API_KEYS_FILE: keys, NATS_URL: '' });
        assert.match(c.host, /^(127\.0\.0\.1|0\.0\.0\.0)$/, `${name}: HOST`);
        assert.equal(c.dataDir, '/var/lib/auris', `${name}: DATA_DIR`);
      }
    } finally {
      dir.cleanup();
    }
  });

  it('API keys map to their project; lookups compare every key', () => {
    const reg = new ApiKeyRegistry([
      { key: 'alpha-key-1', organizationId: 'o1', projectId: 'p1' },
      { key: 'beta-key-22', organizationId: 'o2', projectId: 'p2' },
    ]);
    assert.equal(reg.lookup('alpha-key-1')?.project_id, 'p1');
    assert.equal(reg.lookup('beta-key-22')?.organization_id, 'o2');
    assert.equal(reg.lookup('alpha-key-'), null);
    assert.equal(reg.lookup(''), null);
    assert.notEqual(reg.lookup('alpha-key-1')?.key_id, reg.lookup('beta-key-22')?.key_id);
  });

  it('rate limiter: burst, then rate, with Retry-After seconds', () => {
    const rl = new RateLimiter(2, 3);
    const t = 1_000_000;
    assert.equal(rl.take('k', t), 0);
    assert.equal(rl.take('k', t), 0);
    assert.equal(rl.take('k', t), 0);
    assert.equal(rl.take('k', t), 1);
    assert.equal(rl.take('k', t + 500), 0);
    assert.equal(rl.take('other', t), 0);
  });
});

/**
 * An environment file as systemd's EnvironmentFile reads it: lines starting with # or ; are comments,
 * KEY=VALUE with the whitespace around both stripped, a value in matching quotes unquoted; a # after a
 * value is part of it.
 */
function systemdEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]!)) value = value.slice(1, -1);
    env[line.slice(0, eq).trim()] = value;
  }
  return env;
}
