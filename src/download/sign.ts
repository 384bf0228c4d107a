/**
 * The JWT of every download request, sent as `X-Service-Request-Verification`:
 *
 *   header  { alg: "ES512", kid, typ: "JWT" }
 *   claims  { organization_id, project_id, job_id, url, iat, jti, exp }
 *
 * `url` is the URL exactly as given when the job was created (also on redirected hops),
 * `jti` is new for every request (every hop, every retry), `exp` is `iat` + the configured
 * lifetime (DOWNLOAD_TOKEN_TTL_SECONDS, default 300).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { type KeyRing, SIGNING_ALG } from './keys';

export const VERIFICATION_HEADER = 'X-Service-Request-Verification';

export interface DownloadClaims {
  organization_id: string;
  project_id: string;
  job_id: string;
  url: string;
  iat: number;
  jti: string;
  exp: number;
}

export interface DownloadIdentity {
  organizationId: string;
  projectId: string;
  jobId: string;
  /** The file URL exactly as given at job creation. */
  url: string;
}

export class DownloadSigner {
  constructor(
    readonly keys: KeyRing,
    readonly ttlSec: number = 300,
    private readonly now: () => number = Date.now,
  ) {
    if (!(ttlSec > 0)) throw new RangeError('the token lifetime must be positive');
  }

  /** A fresh token for one request. */
  async sign(id: DownloadIdentity): Promise<string> {
    const iat = Math.floor(this.now() / 1000);
    const key = this.keys.signing;
    return new SignJWT({ organization_id: id.organizationId, project_id: id.projectId, job_id: id.jobId, url: id.url })
      .setProtectedHeader({ alg: SIGNING_ALG, kid: key.kid, typ: 'JWT' })
      .setIssuedAt(iat)
      .setJti(randomUUID())
      .setExpirationTime(iat + Math.ceil(this.ttlSec))
      .sign(key.privateKey);
  }
}
