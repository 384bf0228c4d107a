/**
 * For file hosts: checks the `X-Service-Request-Verification` JWT of a download request
 * made by this service (see docs/download.md).
 *
 *   const seen = new MemoryJtiStore();
 *   const jwks = await (await fetch('https://auris.example/.well-known/jwks.json')).json();
 *   try {
 *     const { claims } = await verifyDownloadRequest(req.headers, {
 *       jwks, organizationId: 'my-org', projectId: 'my-project',
 *       expectedUrl: `https://files.example${req.url}`, seenJti: seen,
 *     });
 *     // serve the file
 *   } catch (err) {
 *     // DownloadVerificationError: answer 403
 *   }
 *
 * Checked, in this order: the header is present once and is a compact JWS; the protected
 * header has alg ES512 (nothing else is accepted) and a kid that names one of the given keys
 * (which must be EC P-521); the signature; exp (not expired), iat (not in the future) with
 * `clockToleranceSec` of skew and a lifetime of at most `maxLifetimeSec`; every claim
 * (organization_id, project_id, url exactly, job_id when given, jti present); finally the
 * jti must not have been seen before (it is recorded only for a token that passed all else).
 */
import { createPublicKey, type KeyObject } from 'node:crypto';
import { decodeProtectedHeader, errors as joseErrors, importJWK, type JWK, type JWTHeaderParameters, type JWTPayload, type JWTVerifyGetKey, jwtVerify, type ProtectedHeaderParameters } from 'jose';
import type { DownloadClaims } from './sign';

export const VERIFICATION_HEADER_NAME = 'x-service-request-verification';

export type DownloadVerificationErrorCode =
  | 'MISSING_TOKEN'
  | 'MALFORMED_TOKEN'
  | 'UNSUPPORTED_ALGORITHM'
  | 'UNKNOWN_KEY'
  | 'INVALID_SIGNATURE'
  | 'TOKEN_EXPIRED'
  | 'TOKEN_NOT_YET_VALID'
  | 'TOKEN_LIFETIME_TOO_LONG'
  | 'MISSING_CLAIM'
  | 'CLAIM_MISMATCH'
  | 'REPLAYED';

/** Why a download request was rejected. File hosts answer 403 (never serve the file). */
export class DownloadVerificationError extends Error {
  override name = 'DownloadVerificationError';
  constructor(
    readonly code: DownloadVerificationErrorCode,
    message: string,
    /** The claim that failed, for CLAIM_MISMATCH / MISSING_CLAIM. */
    readonly claim?: string,
  ) {
    super(message);
  }
}

/** Remembers seen jti values until their token expires. */
export interface JtiStore {
  /** True when `jti` was not seen before (and records it until `expiresAtSec`); false for a replay. */
  checkAndAdd(jti: string, expiresAtSec: number): boolean | Promise<boolean>;
}

/**
 * In-memory JtiStore for one process: entries are dropped once their token has expired
 * (plus the clock tolerance), so memory stays bounded by the request rate x token lifetime.
 * When `maxEntries` unexpired tokens are held, new tokens are refused (fail closed).
 * Several file-host processes behind a load balancer need a shared store (e.g. Redis SET NX EX).
 */
export class MemoryJtiStore implements JtiStore {
  private readonly seen = new Map<string, number>();
  private nextPrune = 0;

  constructor(
    private readonly maxEntries = 1_000_000,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.seen.size;
  }

  checkAndAdd(jti: string, expiresAtSec: number): boolean {
    const nowSec = this.now() / 1000;
    if (nowSec >= this.nextPrune || this.seen.size >= this.maxEntries) {
      for (const [k, exp] of this.seen) if (exp < nowSec) this.seen.delete(k);
      this.nextPrune = nowSec + 10;
    }
    if (this.seen.has(jti)) return false;
    if (this.seen.size >= this.maxEntries) return false;
    this.seen.set(jti, expiresAtSec);
    return true;
  }
}

/** A public key: KeyObject, PEM (SPKI), base64 DER (SPKI, the spec's form) or a public JWK. */
export type PublicKeyInput = KeyObject | string | JWK;

export interface VerifyDownloadOptions {
  /** The service's JWK Set (GET /.well-known/jwks.json), or a jose key getter such as createRemoteJWKSet(url). */
  jwks?: { keys: JWK[] } | JWTVerifyGetKey;
  /** Instead of jwks: the published key(s) with their key id (GET /verification-keys). */
  publicKey?: PublicKeyInput | { kid: string; key: PublicKeyInput } | Array<{ kid: string; key: PublicKeyInput }>;
  /** Key id of `publicKey` when it is given as a bare key. */
  kid?: string;
  /** The organization and project whose downloads this host serves. */
  organizationId: string;
  projectId: string;
  /** The URL being requested, exactly as the client gave it to the service; or a predicate. */
  expectedUrl: string | ((url: string) => boolean);
  /** When known: the job the download must belong to. */
  jobId?: string;
  /** Replay protection: a JtiStore (MemoryJtiStore) or a Set of seen jti values. */
  seenJti: JtiStore | Set<string>;
  /** Allowed clock skew, seconds (default 30). */
  clockToleranceSec?: number;
  /** Longest accepted token lifetime exp - iat, seconds (default 3600). */
  maxLifetimeSec?: number;
  /** Current time, ms (default Date.now). */
  now?: () => number;
}

export interface VerifiedDownloadRequest {
  claims: DownloadClaims;
  kid: string;
  token: string;
}

type HeaderBag = { get(name: string): string | null } | Record<string, string | string[] | number | undefined>;

function headerValue(headers: HeaderBag): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') {
    return (headers as { get(name: string): string | null }).get(VERIFICATION_HEADER_NAME) ?? undefined;
  }
  let found: string | undefined;
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() !== VERIFICATION_HEADER_NAME || v === undefined) continue;
    const values = Array.isArray(v) ? v : [v];
    if (found !== undefined || values.length !== 1) throw new DownloadVerificationError('MALFORMED_TOKEN', 'The verification header is present more than once.');
    found = String(values[0]);
  }
  return found;
}

const JWS_COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

function toPublicKey(input: PublicKeyInput): KeyObject | Promise<KeyObject | Uint8Array> {
  if (typeof input === 'string') {
    const text = input.trim();
    if (text.startsWith('-----BEGIN')) return createPublicKey(text);
    return createPublicKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'spki' });
  }
  if ((input as KeyObject).type === 'public' || (input as KeyObject).type === 'private') {
    return (input as KeyObject).type === 'private' ? createPublicKey(input as KeyObject) : (input as KeyObject);
  }
  return importJWK({ ...(input as JWK), alg: 'ES512' }, 'ES512') as Promise<KeyObject>;
}

/** A problem with the verification keys given (a configuration error, not the request's fault). */
export class KeyConfigError extends TypeError {
  override name = 'KeyConfigError';
}

function checkP521(key: KeyObject | Uint8Array, kid: string): KeyObject {
  const k = key as KeyObject;
  if (!(typeof k === 'object' && 'asymmetricKeyType' in k) || k.asymmetricKeyType !== 'ec' || k.asymmetricKeyDetails?.namedCurve !== 'secp521r1') {
    throw new KeyConfigError(`verification key ${kid} is not an EC P-521 public key`);
  }
  return k;
}

type KeyLookup = (header: ProtectedHeaderParameters, token: string) => Promise<KeyObject | Uint8Array>;

/** The key lookup of the options (built per call: cheap next to the ES512 verification, and never stale). */
function keyLookup(opts: VerifyDownloadOptions): KeyLookup {
  if (opts.jwks === undefined && opts.publicKey === undefined) throw new KeyConfigError('verifyDownloadRequest: give jwks or publicKey');
  let lookup: KeyLookup;
  if (typeof opts.jwks === 'function') {
    const getKey = opts.jwks;
    lookup = async (header, token) => {
      const [protectedPart, payload, signature] = token.split('.') as [string, string, string];
      return (await getKey(header as JWTHeaderParameters, { protected: protectedPart, payload, signature })) as KeyObject;
    };
  } else {
    let entries: Array<{ kid: string; key: PublicKeyInput }>;
    if (opts.jwks) {
      entries = opts.jwks.keys.filter((k) => typeof k.kid === 'string').map((k) => ({ kid: k.kid!, key: k }));
    } else if (Array.isArray(opts.publicKey)) {
      entries = opts.publicKey;
    } else if (opts.publicKey && typeof opts.publicKey === 'object' && 'kid' in opts.publicKey && 'key' in opts.publicKey) {
      entries = [opts.publicKey as { kid: string; key: PublicKeyInput }];
    } else {
      if (!opts.kid) throw new KeyConfigError('verifyDownloadRequest: a bare publicKey needs its kid');
      entries = [{ kid: opts.kid, key: opts.publicKey as PublicKeyInput }];
    }
    const byKid = new Map<string, PublicKeyInput>();
    for (const e of entries) {
      if (byKid.has(e.kid)) throw new KeyConfigError(`verification key id ${e.kid} is given twice`);
      byKid.set(e.kid, e.key);
    }
    lookup = async (header) => {
      const input = byKid.get(header.kid!);
      if (input === undefined) throw new DownloadVerificationError('UNKNOWN_KEY', `No verification key has the id ${JSON.stringify(header.kid)}.`);
      let key: KeyObject | Uint8Array;
      try {
        key = await toPublicKey(input);
      } catch (err) {
        throw new KeyConfigError(`verification key ${header.kid} cannot be read: ${(err as Error).message}`);
      }
      return checkP521(key, header.kid!);
    };
  }
  return lookup;
}

function mapJoseError(err: unknown): DownloadVerificationError {
  if (err instanceof KeyConfigError) throw err; // the caller's keys are wrong: not a verdict on the request
  if (err instanceof DownloadVerificationError) return err;
  if (!(err instanceof joseErrors.JOSEError)) throw err; // e.g. a key getter that cannot reach its JWKS: not a verdict either
  if (err instanceof joseErrors.JWTExpired) return new DownloadVerificationError('TOKEN_EXPIRED', 'The token has expired.');
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'iat') return new DownloadVerificationError('TOKEN_NOT_YET_VALID', `The token's iat is not acceptable: ${err.message}.`);
    if (err.claim === 'nbf') return new DownloadVerificationError('TOKEN_NOT_YET_VALID', 'The token is not valid yet.');
    return new DownloadVerificationError('MISSING_CLAIM', `Claim check failed: ${err.message}.`, err.claim);
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return new DownloadVerificationError('INVALID_SIGNATURE', 'The token signature is not valid.');
  if (err instanceof joseErrors.JWKSNoMatchingKey) return new DownloadVerificationError('UNKNOWN_KEY', 'No verification key matches the token kid.');
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return new DownloadVerificationError('UNSUPPORTED_ALGORITHM', 'Only ES512 tokens are accepted.');
  return new DownloadVerificationError('MALFORMED_TOKEN', `The token is malformed: ${(err as Error).message}.`);
}

function requireString(payload: JWTPayload, claim: string): string {
  const v = payload[claim];
  if (typeof v !== 'string' || v === '') throw new DownloadVerificationError('MISSING_CLAIM', `The token has no ${claim} claim.`, claim);
  return v;
}

function mismatch(claim: string): DownloadVerificationError {
  return new DownloadVerificationError('CLAIM_MISMATCH', `The token's ${claim} does not match this request.`, claim);
}

/**
 * Verifies a download request's `X-Service-Request-Verification` header. Resolves with the
 * claims, or rejects with a DownloadVerificationError (answer 403 then). A KeyConfigError
 * (or a key getter's own error) means the keys given are unusable: fix the configuration.
 * `headers`: Node's req.headers, a fetch Headers, or a plain object.
 */
export async function verifyDownloadRequest(headers: HeaderBag, opts: VerifyDownloadOptions): Promise<VerifiedDownloadRequest> {
  const tolerance = opts.clockToleranceSec ?? 30;
  const maxLifetime = opts.maxLifetimeSec ?? 3600;
  const nowMs = (opts.now ?? Date.now)();

  const raw = headerValue(headers);
  if (raw === undefined || raw.trim() === '') throw new DownloadVerificationError('MISSING_TOKEN', 'The X-Service-Request-Verification header is missing.');
  const token = raw.trim();
  if (!JWS_COMPACT.test(token)) throw new DownloadVerificationError('MALFORMED_TOKEN', 'The verification header is not a compact JWT.');

  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    throw new DownloadVerificationError('MALFORMED_TOKEN', 'The token header cannot be decoded.');
  }
  if (header.alg !== 'ES512') throw new DownloadVerificationError('UNSUPPORTED_ALGORITHM', `The token algorithm is ${JSON.stringify(header.alg)}; only ES512 is accepted.`);
  if (typeof header.kid !== 'string' || header.kid === '') throw new DownloadVerificationError('UNKNOWN_KEY', 'The token header has no kid.');
  if (header.typ !== undefined && header.typ !== 'JWT') throw new DownloadVerificationError('MALFORMED_TOKEN', `The token typ is ${JSON.stringify(header.typ)}.`);

  const lookup = keyLookup(opts);
  let payload: JWTPayload;
  try {
    const key = await lookup(header, token);
    ({ payload } = await jwtVerify(token, key, {
      algorithms: ['ES512'],
      clockTolerance: tolerance,
      currentDate: new Date(nowMs),
      maxTokenAge: maxLifetime,
      requiredClaims: ['iat', 'exp', 'jti'],
    }));
  } catch (err) {
    throw mapJoseError(err);
  }

  const iat = payload.iat!;
  const exp = payload.exp!;
  if (exp - iat > maxLifetime) throw new DownloadVerificationError('TOKEN_LIFETIME_TOO_LONG', `The token lives ${exp - iat} s; at most ${maxLifetime} s is accepted.`);
  if (iat > nowMs / 1000 + tolerance) throw new DownloadVerificationError('TOKEN_NOT_YET_VALID', 'The token was issued in the future.');

  const claims: DownloadClaims = {
    organization_id: requireString(payload, 'organization_id'),
    project_id: requireString(payload, 'project_id'),
    job_id: requireString(payload, 'job_id'),
    url: requireString(payload, 'url'),
    iat,
    jti: requireString(payload, 'jti'),
    exp,
  };
  if (claims.organization_id !== opts.organizationId) throw mismatch('organization_id');
  if (claims.project_id !== opts.projectId) throw mismatch('project_id');
  if (typeof opts.expectedUrl === 'function' ? !opts.expectedUrl(claims.url) : claims.url !== opts.expectedUrl) throw mismatch('url');
  if (opts.jobId !== undefined && claims.job_id !== opts.jobId) throw mismatch('job_id');

  // Last: record the jti only for a token that passed every other check.
  const store = opts.seenJti;
  let fresh: boolean;
  if (store instanceof Set) {
    fresh = !store.has(claims.jti);
    if (fresh) store.add(claims.jti);
  } else {
    fresh = await store.checkAndAdd(claims.jti, exp + tolerance);
  }
  if (!fresh) throw new DownloadVerificationError('REPLAYED', 'This token (jti) has been used before.');
  return { claims, kid: header.kid, token };
}
