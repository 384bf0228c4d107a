/**
 * SSRF unit tests: address classes (IPv4, IPv6, IPv4 inside IPv6), the allowlist, URL
 * forms, resolution (every address must pass), and the Downloader refusing before any
 * connection (the test connector records and refuses anything that is not loopback).
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Downloader } from '../../src/download/fetch';
import { type KeyRing, loadKeyRing } from '../../src/download/keys';
import { DownloadSigner } from '../../src/download/sign';
import { checkUrlForm, classifyAddress, EMPTY_POLICY, parseAllowlist, parseCidr, parseIp, refusal, resolveChecked } from '../../src/download/ssrf';
import type { AurisError } from '../../src/errors';
import { guardedNet, startHost, tempDir } from './helpers';

describe('address classes', () => {
  const cases: Array<[string, string | null]> = [
    // IPv4
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared'],
    ['169.254.1.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['192.0.0.192', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'reserved'],
    ['8.8.8.8', null],
    ['93.184.216.34', null],
    ['172.15.255.255', null],
    ['172.32.0.0', null],
    ['100.63.255.255', null],
    ['100.128.0.0', null],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff05::2', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['2606:4700:4700::1111', null],
    ['2a00:1450:4001::200e', null],
    // IPv4 inside IPv6
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'loopback'],
    ['::10.0.0.1', 'private'],
    ['::2', 'unspecified'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::8.8.8.8', null],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:a9fe:a9fe::', 'metadata'],
    ['::ffff:8.8.8.8', null],
    ['fe80::1%eth0', 'link-local'],
  ];
  for (const [addr, want] of cases) {
    it(`${addr} -> ${want ?? 'allowed'}`, () => assert.equal(classifyAddress(addr), want));
  }

  it('parses IPv6 forms to the same bytes', () => {
    assert.deepEqual(parseIp('::ffff:127.0.0.1'), parseIp('0:0:0:0:0:ffff:7f00:0001'));
    assert.deepEqual(parseIp('[::1]'), parseIp('0::1'));
    assert.equal(parseIp('not-an-ip'), null);
    assert.equal(parseIp('1.2.3'), null);
  });
});

describe('allowlist', () => {
  it('parses hosts, addresses and CIDR ranges; rejects junk', () => {
    const p = parseAllowlist(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '[::1]', 'Files.Corp', '*.internal.example', ' ']);
    assert.deepEqual(p.hosts, [
      { pattern: 'files.corp', port: null },
      { pattern: '*.internal.example', port: null },
    ]);
    assert.deepEqual(p.cidrs.map((c) => c.text), ['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '[::1]']);
    assert.throws(() => parseAllowlist(['10.0.0.0/33']));
    assert.throws(() => parseAllowlist(['http://x']));
    assert.throws(() => parseAllowlist(['a b']));
    assert.throws(() => parseCidr('1.2.3.4/x'));
  });

  it('a CIDR admits its addresses (also IPv4-mapped), nothing else', () => {
    const p = parseAllowlist(['127.0.0.1', '10.1.0.0/16']);
    assert.equal(refusal('127.0.0.1', 'x', p), null);
    assert.equal(refusal('::ffff:127.0.0.1', 'x', p), null);
    assert.equal(refusal('127.0.0.2', 'x', p), 'loopback');
    assert.equal(refusal('10.1.200.3', 'x', p), null);
    assert.equal(refusal('10.2.0.1', 'x', p), 'private');
    assert.equal(refusal('169.254.169.254', 'x', p), 'metadata');
  });

  it('an entry may name a port: host:port, address:port, [v6]:port; then it admits only that port', () => {
    const p = parseAllowlist(['files.corp:8443', '10.0.0.5:9000', '[fd00::5]:443', 'fd00::1:80']);
    assert.deepEqual(p.hosts, [{ pattern: 'files.corp', port: 8443 }]);
    assert.deepEqual(
      p.cidrs.map((c) => [c.text, c.port]),
      [
        ['10.0.0.5', 9000],
        ['[fd00::5]', 443],
        ['fd00::1:80', null], // a bare IPv6 address: its last group is not a port
      ],
    );
    assert.equal(refusal('10.1.1.1', 'files.corp', p, 8443), null);
    assert.equal(refusal('10.1.1.1', 'files.corp', p, 80), 'private');
    assert.equal(refusal('10.1.1.1', 'files.corp', p), 'private', 'no port given: port entries do not apply');
    assert.equal(refusal('10.0.0.5', 'x', p, 9000), null);
    assert.equal(refusal('10.0.0.5', 'x', p, 9001), 'private');
    assert.equal(refusal('fd00::5', 'x', p, 443), null);
    assert.throws(() => parseAllowlist(['files.corp:0']));
    assert.throws(() => parseAllowlist(['files.corp:70000']));
    assert.throws(() => parseAllowlist(['10.0.0.0/8:443']));
  });

  it('a host name admits its private addresses, but never a metadata address', () => {
    const p = parseAllowlist(['files.corp', '*.nas.corp']);
    assert.equal(refusal('10.0.0.5', 'files.corp', p), null);
    assert.equal(refusal('10.0.0.5', 'FILES.CORP.', p), null);
    assert.equal(refusal('10.0.0.5', 'a.nas.corp', p), null);
    assert.equal(refusal('10.0.0.5', 'nas.corp', p), 'private');
    assert.equal(refusal('10.0.0.5', 'other.corp', p), 'private');
    assert.equal(refusal('169.254.169.254', 'files.corp', p), 'metadata');
    // a metadata address needs an explicit range
    assert.equal(refusal('169.254.169.254', 'x', parseAllowlist(['169.254.169.254/32'])), null);
  });
});

describe('URL form and resolution', () => {
  const code = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (e) {
      return (e as AurisError).code;
    }
    return undefined;
  };

  it('only http and https, absolute, without credentials', () => {
    for (const u of ['ftp://example.com/a.wav', 'file:///etc/passwd', 'gopher://x/', 'data:audio/wav;base64,AAAA', 'javascript:alert(1)', 'not a url', '/relative', 'http://user:pw@example.com/a.wav']) {
      assert.equal(code(() => checkUrlForm(u)), 'URL_NOT_ALLOWED', u);
    }
    assert.equal(code(() => checkUrlForm('https://example.com/a.wav')), undefined);
  });

  it('every resolved address must pass; literals need no DNS; localhost is refused by name', async () => {
    const net = guardedNet({ 'mixed.test': ['93.184.216.34', '10.0.0.1'], 'v6.test': ['2606:4700::1', '::ffff:192.168.0.1'], 'ok.test': ['93.184.216.34', '2606:4700::1'] });
    const refused = async (url: string): Promise<string> => {
      try {
        await resolveChecked(new URL(url), EMPTY_POLICY, net.resolver);
      } catch (e) {
        return (e as AurisError).code;
      }
      return 'allowed';
    };
    assert.equal(await refused('http://mixed.test/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://v6.test/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://ok.test/'), 'allowed');
    assert.equal(await refused('http://unknown.test/'), 'DOWNLOAD_FAILED');
    const before = net.lookups.length;
    assert.equal(await refused('http://127.0.0.1/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://[::1]/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://2130706433/'), 'URL_NOT_ALLOWED'); // 127.0.0.1 in decimal
    assert.equal(await refused('http://0x7f.1/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://[::ffff:169.254.169.254]/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://localhost/'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://LOCALHOST./'), 'URL_NOT_ALLOWED');
    assert.equal(await refused('http://app.localhost/'), 'URL_NOT_ALLOWED');
    assert.equal(net.lookups.length, before, 'no lookup for literals or localhost');
  });
});

describe('the Downloader refuses before connecting', () => {
  let keys: KeyRing;
  const dir = tempDir('auris-ssrf-');

  it('127.0.0.1, localhost, [::1], 10.x, 169.254.169.254, a name resolving to a private address, non-http: URL_NOT_ALLOWED', async (t) => {
    keys = await loadKeyRing({ dataDir: dir.path });
    t.after(() => rmSync(join(dir.path), { recursive: true, force: true }));
    // A real host on 127.0.0.1: without an allowlist even it must be refused.
    const host = await startHost((_req, res) => void res.end('RIFF'));
    t.after(() => host.close());
    const net = guardedNet({ 'files.internal.test': ['10.20.30.40'], 'rebind.test': ['127.0.0.1'], localhost: ['127.0.0.1', '::1'] });
    const d = new Downloader({
      signer: new DownloadSigner(keys),
      policy: EMPTY_POLICY,
      maxBytes: 1e6,
      timeoutMs: 5000,
      connectTimeoutMs: 1000,
      resolver: net.resolver,
      connector: net.connector,
      probe: null,
    });
    const urls = [
      host.url + '/a.wav',
      `http://localhost:${host.port}/a.wav`,
      `http://[::1]:${host.port}/a.wav`,
      'http://10.0.0.1/a.wav',
      'http://10.255.1.2:8080/a.wav',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://100.100.100.200/',
      'http://files.internal.test/a.wav',
      `http://rebind.test:${host.port}/a.wav`,
      'ftp://example.com/a.wav',
      'file:///etc/passwd',
    ];
    for (const url of urls) {
      await assert.rejects(
        d.download({ identity: { url, jobId: 'j', organizationId: 'o', projectId: 'p' }, destPath: join(dir.path, 'out') }),
        // A name that resolves to a refused address fails like an unreachable host (no DNS oracle).
        (e: AurisError) => (e.code === 'URL_NOT_ALLOWED' && /not allowed|Only http/.test(e.message)) || (/\.test/.test(url) && e.code === 'DOWNLOAD_FAILED' && /could not be reached/.test(e.message)),
        url,
      );
    }
    assert.deepEqual(net.violations, [], 'nothing outside loopback was even attempted');
    assert.deepEqual(net.connections, [], 'the check refused before connecting');
    assert.equal(host.requests.length, 0);
  });
});
