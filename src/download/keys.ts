/**
 * The key pairs that sign URL downloads (ES512: ECDSA on P-521 with SHA-512).
 *
 *  - The signing key is SIGNING_KEY_FILE (a PEM private key) when configured, else
 *    DATA_DIR/keys/download-signing-key.pem, generated on first start (mode 0600, in a 0700
 *    directory; created atomically, so two processes starting at once agree on one key).
 *  - VERIFICATION_KEY_FILES lists more keys (PEM, public or private) that are published but
 *    do not sign: the next key before a rotation, the previous one until its tokens expire.
 *  - The key id (`kid`) is the RFC 7638 JWK thumbprint (SHA-256, base64url) of the public
 *    key: stable, derived from the key alone, the same on every instance that shares it.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject, randomBytes } from 'node:crypto';
import { chmod, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';

export const SIGNING_ALG = 'ES512';
export const SIGNING_CURVE = 'secp521r1';
export const DEFAULT_KEY_FILE = join('keys', 'download-signing-key.pem');

export interface PublicKeyEntry {
  kid: string;
  publicKey: KeyObject;
  /** Public JWK with kid, alg, use. */
  jwk: JWK;
  /** SubjectPublicKeyInfo, DER. */
  spki: Buffer;
  /** Where it came from (a path), for messages. */
  source: string;
}

export interface SigningKeyEntry extends PublicKeyEntry {
  privateKey: KeyObject;
}

/** The spec's form of a published key: key id and base64 DER (SPKI). */
export interface VerificationKey {
  kid: string;
  alg: 'ES512';
  /** Base64 of the DER SubjectPublicKeyInfo. */
  public_key: string;
  /** True for the key that signs now. */
  signing: boolean;
}

export class KeyRing {
  /** Every published key, the signing key first. */
  readonly published: readonly PublicKeyEntry[];

  constructor(
    readonly signing: SigningKeyEntry,
    others: readonly PublicKeyEntry[] = [],
  ) {
    const seen = new Set([signing.kid]);
    this.published = [signing, ...others.filter((k) => !seen.has(k.kid) && seen.add(k.kid))];
  }

  /** RFC 7517 JWK Set of the public keys. */
  jwks(): { keys: JWK[] } {
    return { keys: this.published.map((k) => ({ ...k.jwk })) };
  }

  verificationKeys(): VerificationKey[] {
    return this.published.map((k) => ({ kid: k.kid, alg: SIGNING_ALG, public_key: k.spki.toString('base64'), signing: k.kid === this.signing.kid }));
  }
}

export class KeyError extends Error {
  override name = 'KeyError';
}

function checkCurve(key: KeyObject, source: string): void {
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== SIGNING_CURVE) {
    const what = key.asymmetricKeyType === 'ec' ? `an EC key on ${key.asymmetricKeyDetails?.namedCurve}` : `a ${key.asymmetricKeyType} key`;
    throw new KeyError(`${source}: the download signing keys must be EC P-521 (ES512); this is ${what}`);
  }
}

/** Public entry of a key (kid = JWK thumbprint). */
export async function publicEntry(publicKey: KeyObject, source: string): Promise<PublicKeyEntry> {
  checkCurve(publicKey, source);
  const raw = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(raw, 'sha256');
  const jwk: JWK = { kty: raw.kty, crv: raw.crv, x: raw.x, y: raw.y, kid, alg: SIGNING_ALG, use: 'sig' };
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  return { kid, publicKey, jwk, spki, source };
}

export async function signingEntry(privateKey: KeyObject, source: string): Promise<SigningKeyEntry> {
  checkCurve(privateKey, source);
  return { ...(await publicEntry(createPublicKey(privateKey), source)), privateKey };
}

/** A new P-521 private key, PKCS#8 PEM. */
export function generateKeyPem(): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: SIGNING_CURVE });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
}

/**
 * Writes a new key file with mode 0600, atomically and without replacing an existing file
 * (temp file + hard link). Returns false when the file already exists.
 */
export async function writeKeyFileExclusive(path: string, pem: string): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  await writeFile(tmp, pem, { mode: 0o600, flag: 'wx' });
  try {
    await link(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

async function readPem(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    throw new KeyError(`cannot read the key file ${path}: ${(err as Error).message}`);
  }
}

function parsePrivate(pem: string, source: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new KeyError(`${source}: not a PEM private key (${(err as Error).message})`);
  }
}

/** A PEM private key (its public half is used) or a PEM public key. */
function parseAnyPublic(pem: string, source: string): KeyObject {
  try {
    return createPublicKey(pem);
  } catch (err) {
    throw new KeyError(`${source}: not a PEM public or private key (${(err as Error).message})`);
  }
}

export interface KeySettings {
  dataDir: string;
  /** PEM private key that signs; default DATA_DIR/keys/download-signing-key.pem (generated). */
  signingKeyFile?: string;
  /** More published keys (PEM, public or private). */
  verificationKeyFiles?: readonly string[];
}

export interface KeyLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

/** Loads (or, on first start, generates) the signing key and the published keys. */
export async function loadKeyRing(settings: KeySettings, log?: KeyLogger): Promise<KeyRing> {
  let path: string;
  if (settings.signingKeyFile) {
    path = settings.signingKeyFile;
  } else {
    path = join(settings.dataDir, DEFAULT_KEY_FILE);
    const created = await writeKeyFileIfMissing(path);
    if (created) log?.info({ path }, 'generated the download signing key (EC P-521)');
  }
  const st = await stat(path).catch(() => null);
  if (st && (st.mode & 0o077) !== 0) {
    if (!settings.signingKeyFile) await chmod(path, 0o600); // ours: tighten it
    else log?.warn({ path, mode: (st.mode & 0o777).toString(8) }, 'the download signing key file is readable by group or others; chmod 600 it');
  }
  const signing = await signingEntry(parsePrivate(await readPem(path), path), path);
  const others: PublicKeyEntry[] = [];
  for (const f of settings.verificationKeyFiles ?? []) others.push(await publicEntry(parseAnyPublic(await readPem(f), f), f));
  return new KeyRing(signing, others);
}

async function writeKeyFileIfMissing(path: string): Promise<boolean> {
  if (await stat(path).then(() => true, () => false)) return false;
  return writeKeyFileExclusive(path, generateKeyPem());
}
