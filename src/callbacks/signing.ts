/**
 * Signing secrets of job-finished callbacks (Standard Webhooks, https://www.standardwebhooks.com):
 * every callback carries `webhook-id` (the event id), `webhook-timestamp` (Unix seconds of
 * this attempt) and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`),
 * keyed with the project's secret (`whsec_<base64>`).
 *
 * A project's secret is the one configured for it (CALLBACK_SECRETS entries
 * `organization_id:project_id:whsec_...`), else derived from the service's master secret
 * (CALLBACK_SECRET_FILE, default DATA_DIR/keys/callback-secret, generated on first start):
 * HMAC-SHA256(master, "auris-callback:" + organization_id + ":" + project_id). Derivation
 * keeps one file to share between instances instead of one secret per project.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { writeKeyFileExclusive } from '../download/keys';

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
export const SECRET_PREFIX = 'whsec_';
export const DEFAULT_SECRET_FILE = join('keys', 'callback-secret');

export class CallbackSecretError extends Error {
  override name = 'CallbackSecretError';
}

export interface Project {
  organization_id: string;
  project_id: string;
}

/** Parses `organization_id:project_id:whsec_...` entries (CALLBACK_SECRETS). */
export function parseCallbackSecrets(entries: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const entry of entries) {
    const parts = entry.split(':');
    const secret = parts[2] ?? '';
    if (parts.length !== 3 || !parts[0] || !parts[1] || !isSecret(secret)) {
      throw new CallbackSecretError('CALLBACK_SECRETS entries must be organization_id:project_id:whsec_<base64 of 24 to 64 bytes>');
    }
    out.set(projectKey({ organization_id: parts[0], project_id: parts[1] }), secret);
  }
  return out;
}

function isSecret(s: string): boolean {
  if (!s.startsWith(SECRET_PREFIX)) return false;
  const raw = s.slice(SECRET_PREFIX.length);
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw)) return false;
  const n = Buffer.from(raw, 'base64').length;
  return n >= 24 && n <= 64;
}

const projectKey = (p: Project): string => `${p.organization_id}\u0000${p.project_id}`;

export class CallbackSecrets {
  constructor(
    private readonly master: Buffer,
    private readonly configured: Map<string, string> = new Map(),
  ) {}

  /** Loads (or creates on first start) the master secret file; parses the configured secrets. */
  static async load(settings: { dataDir: string; secretFile?: string; secrets: readonly string[] }): Promise<CallbackSecrets> {
    const configured = parseCallbackSecrets(settings.secrets);
    const path = settings.secretFile ?? join(settings.dataDir, DEFAULT_SECRET_FILE);
    if (!settings.secretFile) await writeKeyFileExclusive(path, randomBytes(32).toString('base64') + '\n').catch(ignoreExists);
    let text: string;
    try {
      text = (await readFile(path, 'utf8')).trim();
    } catch (err) {
      throw new CallbackSecretError(`cannot read the callback secret file ${path}: ${(err as Error).message}`);
    }
    const master = Buffer.from(text.replace(/^whsec_/, ''), 'base64');
    if (master.length < 16) throw new CallbackSecretError(`the callback secret file ${path} must hold at least 16 bytes of base64`);
    return new CallbackSecrets(master, configured);
  }

  /** The project's signing secret, `whsec_...`. */
  secretFor(project: Project): string {
    const configured = this.configured.get(projectKey(project));
    if (configured) return configured;
    const derived = createHmac('sha256', this.master).update(`auris-callback:${project.organization_id}:${project.project_id}`).digest();
    return SECRET_PREFIX + derived.toString('base64');
  }

  /** The three Standard Webhooks headers of one delivery attempt. */
  sign(project: Project, eventId: string, body: string, at: Date = new Date()): Record<string, string> {
    const signature = new Webhook(this.secretFor(project)).sign(eventId, at, body);
    return {
      [WEBHOOK_ID_HEADER]: eventId,
      [WEBHOOK_TIMESTAMP_HEADER]: String(Math.floor(at.getTime() / 1000)),
      [WEBHOOK_SIGNATURE_HEADER]: signature,
    };
  }
}

function ignoreExists(err: unknown): void {
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
}
