/**
 * src/download: the URL method's signed, SSRF-safe download and the file host's verifier.
 *
 *   keys.ts          EC P-521 signing key (generated in DATA_DIR or configured) + published keys
 *   sign.ts          the ES512 JWT of every download request
 *   ssrf.ts          URL / address checks and the allowlist
 *   guarded-http.ts  one request over a connection to the checked address
 *   fetch.ts         Downloader: redirects, caps, timeouts, early duration check, temp file
 *   verify.ts        verifyDownloadRequest for file hosts (exported from the package)
 *
 * createDownloadService(config) wires them from the typed Config; the server passes the
 * result to the worker (downloads), the callback dispatcher (SSRF guard) and the key routes.
 */
import type { Config } from '../config';
import { Downloader } from './fetch';
import type { Connector, UrlGuard } from './guarded-http';
import { type KeyLogger, type KeyRing, loadKeyRing } from './keys';
import { DownloadSigner } from './sign';
import { parseAllowlist, type Resolver } from './ssrf';
import type { HeadProbe } from './duration';

export { Downloader, type DownloadRequest, type DownloadResult, MAX_REDIRECTS } from './fetch';
export { type Connector, type ConnectTarget, type UrlGuard, defaultConnector, guardedRequest } from './guarded-http';
export { KeyRing, loadKeyRing, generateKeyPem, writeKeyFileExclusive, type VerificationKey } from './keys';
export { DownloadSigner, VERIFICATION_HEADER, type DownloadClaims, type DownloadIdentity } from './sign';
export { classifyAddress, parseAllowlist, type Resolver, systemResolver } from './ssrf';
export {
  verifyDownloadRequest,
  DownloadVerificationError,
  KeyConfigError,
  MemoryJtiStore,
  type JtiStore,
  type VerifyDownloadOptions,
  type VerifiedDownloadRequest,
} from './verify';

/** Injectable network pieces (tests: a fake resolver and a loopback-only connector). */
export interface DownloadDeps {
  resolver?: Resolver;
  connector?: Connector;
  /** Header probe of the early duration check (default: the native addon's). */
  probe?: HeadProbe | null;
  /** Use these keys instead of loading them from the configuration. */
  keys?: KeyRing;
}

export interface DownloadService {
  keys: KeyRing;
  signer: DownloadSigner;
  downloader: Downloader;
  /** The SSRF guard with the same allowlist, for callbacks. */
  guard: UrlGuard;
}

export async function createDownloadService(config: Config, deps: DownloadDeps = {}, log?: KeyLogger): Promise<DownloadService> {
  const d = config.download;
  const keys =
    deps.keys ?? (await loadKeyRing({ dataDir: config.dataDir, signingKeyFile: d.signingKeyFile, verificationKeyFiles: d.verificationKeyFiles }, log));
  const signer = new DownloadSigner(keys, d.tokenTtlSec);
  const policy = parseAllowlist(d.urlAllowlist);
  const guard: UrlGuard = { policy, resolver: deps.resolver, connector: deps.connector };
  const downloader = new Downloader({
    signer,
    policy,
    resolver: deps.resolver,
    connector: deps.connector,
    probe: deps.probe,
    maxBytes: config.limits.maxDownloadBytes,
    timeoutMs: config.limits.downloadTimeoutMs,
    connectTimeoutMs: d.connectTimeoutMs,
  });
  return { keys, signer, downloader, guard };
}
