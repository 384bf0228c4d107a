/**
 * The file host's verifier (exported from the package): accepts the service's tokens with
 * the JWKS, the base64 DER key or a PEM key, and rejects everything else with a code.
 * Tokens are also checked independently with node:crypto against the published DER key.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, SignJWT, UnsecuredJWT } from 'jose';
import { type KeyRing, loadKeyRing } from '../../src/download/keys';
import { DownloadSigner, VERIFICATION_HEADER } from '../../src/download/sign';
import { DownloadVerificationError, KeyConfigError, MemoryJtiStore, verifyDownloadRequest, type VerifyDownloadOptions } from '../../src';
import { tempDir, verifyWithNodeCrypto } from './helpers';

const URL_A = 'https://files.example/audio/a.wav?sig=1&x=%20y';
const ID = { organizationId: 'org-a', projectId: 'proj-a', jobId: 'job-1', url: URL_A };

describe('verifyDownloadRequest', () => {
  const dir = tempDir('auris-verify-');
  let ring: KeyRing;
  let other: KeyRing;
  let signer: DownloadSigner;
  after(() => dir.cleanup());
  before(async () => {
    ring = await loadKeyRing({ dataDir: `${dir.path}/a` });
    other = await loadKeyRing({ dataDir: `${dir.path}/b` });
    signer = new DownloadSigner(ring, 300);
  });

  const opts = (over: Partial<VerifyDownloadOptions> = {}): VerifyDownloadOptions => ({
    jwks: ring.jwks(),
    organizationId: 'org-a',
    projectId: 'proj-a',
    expectedUrl: URL_A,
    seenJti: new MemoryJtiStore(),
    ...over,
  });
  const headers = (token: string): Record<string, string> => ({ [VERIFICATION_HEADER.toLowerCase()]: token });
  const rejects = async (token: string | Record<string, string | string[]>, o: VerifyDownloadOptions, code: string, claim?: string): Promise<void> => {
    await assert.rejects(
      verifyDownloadRequest(typeof token === 'string' ? headers(token) : token, o),
      (e: unknown) => {
        assert.ok(e instanceof DownloadVerificationError, String(e));
        assert.equal(e.code, code, e.message);
        if (claim) assert.equal(e.claim, claim);
        return true;
      },
    );
  };

  it('accepts a service token: header ES512 + kid, every claim; node:crypto agrees', async () => {
    const token = await signer.sign(ID);
    const v = await verifyDownloadRequest(headers(token), opts({ jobId: 'job-1' }));
    assert.equal(v.kid, ring.signing.kid);
    assert.deepEqual(Object.keys(v.claims).sort(), ['exp', 'iat', 'job_id', 'jti', 'organization_id', 'project_id', 'url']);
    assert.equal(v.claims.url, URL_A, 'the URL exactly as given');
    assert.equal(v.claims.exp - v.claims.iat, 300);
    const indep = verifyWithNodeCrypto(token, ring.verificationKeys()[0]!.public_key);
    assert.deepEqual(indep.header, { alg: 'ES512', kid: ring.signing.kid, typ: 'JWT' });
    assert.equal(indep.claims.jti, v.claims.jti);
  });

  it('accepts the key as base64 DER, PEM, a KeyObject, a {kid,key} list, a JWK, or a jose key getter; headers of any kind', async () => {
    const der = ring.verificationKeys()[0]!.public_key;
    const pem = ring.signing.publicKey.export({ type: 'spki', format: 'pem' }) as string;
    const kid = ring.signing.kid;
    const variants: Array<Partial<VerifyDownloadOptions>> = [
      { jwks: undefined, publicKey: der, kid },
      { jwks: undefined, publicKey: pem, kid },
      { jwks: undefined, publicKey: ring.signing.publicKey, kid },
      { jwks: undefined, publicKey: [{ kid: 'old', key: other.verificationKeys()[0]!.public_key }, { kid, key: der }] },
      { jwks: undefined, publicKey: { kid, key: ring.jwks().keys[0]! } },
      { jwks: createLocalJWKSet(ring.jwks()) },
    ];
    for (const v of variants) await verifyDownloadRequest(headers(await signer.sign(ID)), opts(v));
    await verifyDownloadRequest(new Headers({ 'X-Service-Request-Verification': await signer.sign(ID) }), opts());
    await verifyDownloadRequest({ 'X-SERVICE-REQUEST-VERIFICATION': await signer.sign(ID) }, opts());
  });

  it('rejects a missing, empty, duplicated or malformed header', async () => {
    await rejects({}, opts(), 'MISSING_TOKEN');
    await rejects({ 'x-service-request-verification': '' }, opts(), 'MISSING_TOKEN');
    const t = await signer.sign(ID);
    await rejects({ 'x-service-request-verification': [t, t] }, opts(), 'MALFORMED_TOKEN');
    await rejects('Bearer ' + t, opts(), 'MALFORMED_TOKEN');
    await rejects('abc.def', opts(), 'MALFORMED_TOKEN');
    await rejects('a.b.c', opts(), 'MALFORMED_TOKEN');
  });

  it('rejects other algorithms: none, HS512, ES256, RS512', async () => {
    const claims = { organization_id: 'org-a', project_id: 'proj-a', job_id: 'job-1', url: URL_A, jti: randomUUID() };
    const now = Math.floor(Date.now() / 1000);
    const none = new UnsecuredJWT(claims).setIssuedAt(now).setExpirationTime(now + 60).encode();
    await rejects(none.endsWith('.') ? none + 'AAAA' : none, opts(), 'UNSUPPORTED_ALGORITHM');
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS512', kid: ring.signing.kid }).setIssuedAt(now).setExpirationTime(now + 60).sign(new Uint8Array(64));
    await rejects(hs, opts(), 'UNSUPPORTED_ALGORITHM');
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const es256 = await new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: ring.signing.kid }).setIssuedAt(now).setExpirationTime(now + 60).sign(p256.privateKey);
    await rejects(es256, opts(), 'UNSUPPORTED_ALGORITHM');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const rs = await new SignJWT(claims).setProtectedHeader({ alg: 'RS512', kid: ring.signing.kid }).setIssuedAt(now).setExpirationTime(now + 60).sign(rsa.privateKey);
    await rejects(rs, opts(), 'UNSUPPORTED_ALGORITHM');
  });

  it('rejects a wrong or missing kid, and a signature by another key under our kid', async () => {
    const foreign = await new DownloadSigner(other).sign(ID);
    await rejects(foreign, opts(), 'UNKNOWN_KEY');
    await rejects(foreign, opts({ jwks: undefined, publicKey: ring.verificationKeys()[0]!.public_key, kid: ring.signing.kid }), 'UNKNOWN_KEY');
    const now = Math.floor(Date.now() / 1000);
    const claims = { organization_id: 'org-a', project_id: 'proj-a', job_id: 'job-1', url: URL_A };
    const noKid = await new SignJWT(claims).setProtectedHeader({ alg: 'ES512' }).setIssuedAt(now).setJti('x').setExpirationTime(now + 60).sign(ring.signing.privateKey);
    await rejects(noKid, opts(), 'UNKNOWN_KEY');
    const forged = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES512', kid: ring.signing.kid })
      .setIssuedAt(now)
      .setJti('y')
      .setExpirationTime(now + 60)
      .sign(other.signing.privateKey);
    await rejects(forged, opts(), 'INVALID_SIGNATURE');
  });

  it('rejects a tampered payload', async () => {
    const [h, p, s] = (await signer.sign(ID)).split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    claims.url = 'https://files.example/audio/b.wav';
    await rejects(`${h}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${s}`, opts({ expectedUrl: 'https://files.example/audio/b.wav' }), 'INVALID_SIGNATURE');
  });

  it('rejects a token for another organization, project, job or URL', async () => {
    const t = async (): Promise<string> => signer.sign(ID);
    await rejects(await t(), opts({ organizationId: 'org-b' }), 'CLAIM_MISMATCH', 'organization_id');
    await rejects(await t(), opts({ projectId: 'proj-b' }), 'CLAIM_MISMATCH', 'project_id');
    await rejects(await t(), opts({ jobId: 'job-2' }), 'CLAIM_MISMATCH', 'job_id');
    await rejects(await t(), opts({ expectedUrl: 'https://files.example/audio/b.wav' }), 'CLAIM_MISMATCH', 'url');
    // exactly: no normalisation
    await rejects(await t(), opts({ expectedUrl: 'https://files.example/audio/a.wav?sig=1&x=%20y#' }), 'CLAIM_MISMATCH', 'url');
    await rejects(await t(), opts({ expectedUrl: 'https://FILES.example/audio/a.wav?sig=1&x=%20y' }), 'CLAIM_MISMATCH', 'url');
    await rejects(await t(), opts({ expectedUrl: (u) => u.endsWith('/b.wav') }), 'CLAIM_MISMATCH', 'url');
    await verifyDownloadRequest(headers(await t()), opts({ expectedUrl: (u) => u.startsWith('https://files.example/') }));
  });

  it('rejects a token without a required claim', async () => {
    const now = Math.floor(Date.now() / 1000);
    const full: Record<string, string> = { organization_id: 'org-a', project_id: 'proj-a', job_id: 'job-1', url: URL_A };
    for (const drop of ['organization_id', 'project_id', 'job_id', 'url']) {
      const c = { ...full };
      delete c[drop];
      const tok = await new SignJWT(c).setProtectedHeader({ alg: 'ES512', kid: ring.signing.kid }).setIssuedAt(now).setJti(randomUUID()).setExpirationTime(now + 60).sign(ring.signing.privateKey);
      await rejects(tok, opts(), 'MISSING_CLAIM', drop);
    }
    const noJti = await new SignJWT(full).setProtectedHeader({ alg: 'ES512', kid: ring.signing.kid }).setIssuedAt(now).setExpirationTime(now + 60).sign(ring.signing.privateKey);
    await rejects(noJti, opts(), 'MISSING_CLAIM');
    const noExp = await new SignJWT(full).setProtectedHeader({ alg: 'ES512', kid: ring.signing.kid }).setIssuedAt(now).setJti('z').sign(ring.signing.privateKey);
    await rejects(noExp, opts(), 'MISSING_CLAIM');
  });

  it('expiry with a small clock skew; iat in the future; over-long lifetimes', async () => {
    const t0 = Date.now();
    const past = new DownloadSigner(ring, 300, () => t0 - 400_000); // expired 100 s ago
    await rejects(await past.sign(ID), opts(), 'TOKEN_EXPIRED');
    await rejects(await past.sign(ID), opts({ clockToleranceSec: 60 }), 'TOKEN_EXPIRED');
    await verifyDownloadRequest(headers(await past.sign(ID)), opts({ clockToleranceSec: 120 }));
    const slightlyPast = new DownloadSigner(ring, 300, () => t0 - 310_000); // expired 10 s ago: within the default 30 s skew
    await verifyDownloadRequest(headers(await slightlyPast.sign(ID)), opts());
    await rejects(await slightlyPast.sign(ID), opts({ clockToleranceSec: 0 }), 'TOKEN_EXPIRED');
    const future = new DownloadSigner(ring, 300, () => t0 + 120_000);
    await rejects(await future.sign(ID), opts(), 'TOKEN_NOT_YET_VALID');
    const long = new DownloadSigner(ring, 7200);
    await rejects(await long.sign(ID), opts(), 'TOKEN_LIFETIME_TOO_LONG');
    await verifyDownloadRequest(headers(await long.sign(ID)), opts({ maxLifetimeSec: 7200 }));
  });

  it('rejects a replayed jti (MemoryJtiStore, a Set, a custom store); a rejected token burns no jti', async () => {
    const token = await signer.sign(ID);
    const store = new MemoryJtiStore();
    await rejects(token, opts({ seenJti: store, organizationId: 'org-b' }), 'CLAIM_MISMATCH');
    await verifyDownloadRequest(headers(token), opts({ seenJti: store }));
    await rejects(token, opts({ seenJti: store }), 'REPLAYED');
    const set = new Set<string>();
    await verifyDownloadRequest(headers(token), opts({ seenJti: set }));
    await rejects(token, opts({ seenJti: set }), 'REPLAYED');
    const seen: string[] = [];
    const custom = { checkAndAdd: async (jti: string) => (seen.includes(jti) ? false : (seen.push(jti), true)) };
    await verifyDownloadRequest(headers(token), opts({ seenJti: custom }));
    await rejects(token, opts({ seenJti: custom }), 'REPLAYED');
    // every request of the service has its own jti
    const a = await verifyDownloadRequest(headers(await signer.sign(ID)), opts({ seenJti: store }));
    const b = await verifyDownloadRequest(headers(await signer.sign(ID)), opts({ seenJti: store }));
    assert.notEqual(a.claims.jti, b.claims.jti);
  });

  it('MemoryJtiStore forgets expired tokens and fails closed when full', () => {
    let now = 1_000_000;
    const s = new MemoryJtiStore(2, () => now);
    assert.equal(s.checkAndAdd('a', 1010), true);
    assert.equal(s.checkAndAdd('a', 1010), false);
    assert.equal(s.checkAndAdd('b', 1010), true);
    assert.equal(s.checkAndAdd('c', 1010), false, 'full: refuse rather than forget');
    now = 1_020_000;
    assert.equal(s.checkAndAdd('c', 1030), true, 'expired entries were dropped');
    assert.equal(s.size, 1);
  });

  it('unusable verification keys are a KeyConfigError, not a verdict on the request', async () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey;
    const der = p256.export({ type: 'spki', format: 'der' }).toString('base64');
    await assert.rejects(verifyDownloadRequest(headers(await signer.sign(ID)), opts({ jwks: undefined, publicKey: der, kid: ring.signing.kid })), (e) => e instanceof KeyConfigError && /P-521/.test(e.message));
    await assert.rejects(verifyDownloadRequest(headers(await signer.sign(ID)), opts({ jwks: undefined, publicKey: 'bm90IGEga2V5', kid: ring.signing.kid })), KeyConfigError);
    await assert.rejects(verifyDownloadRequest(headers(await signer.sign(ID)), opts({ jwks: undefined, publicKey: der })), KeyConfigError); // no kid
  });
});
