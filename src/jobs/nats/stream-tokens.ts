/**
 * Distributed mode: stream tokens (src/streaming/tokens.ts) in a JetStream KV bucket that every
 * API node shares, `<prefix>_stream_tokens`, so a browser may open its WebSocket on any node
 * behind a load balancer, not only on the one that issued its token.
 *
 * A key is a token's SHA-256 digest (the token itself is never stored); the value is the owner
 * and the expiry. Redeeming reads the entry and purges it on the condition that it is still the
 * revision read: of two nodes redeeming one token at once, exactly one succeeds (single use).
 * The bucket forgets entries after the longest token lifetime any node asked for (max_age, raised
 * by a node configured with a longer STREAM_TOKEN_TTL_SECONDS), so unused tokens do not pile up.
 * The cap on one key's unused tokens is counted per node (IssuedTokens).
 */
import { type KV, nanos, StorageType } from 'nats';
import type { Owner } from '../service';
import { type IssuedToken, IssuedTokens, newToken, type StreamTokenStore, type TokenEntry, tokenDigest } from '../../streaming/tokens';
import { apiErrorCode, type NatsConn, type NatsLogger } from './connection';
import { ensureReplicas } from './settings';

const WRONG_LAST_SEQUENCE = 10071;
/** Entries outlive the token by this much: the purge of an expired entry is no business of a redeem. */
const BUCKET_MARGIN_MS = 10_000;

export class SharedStreamTokens implements StreamTokenStore {
  /** This node's issued tokens, for the per-key cap only (the bucket is the truth). */
  private readonly issued: IssuedTokens;

  private constructor(
    private readonly conn: NatsConn,
    private readonly kv: KV,
    readonly ttlSec: number,
    maxPerKey: number,
    private readonly log: NatsLogger,
  ) {
    this.issued = new IssuedTokens(maxPerKey);
  }

  static async open(conn: NatsConn, opts: { prefix: string; replicas: number }, ttlSec: number, log: NatsLogger, maxPerKey = 1000): Promise<SharedStreamTokens> {
    const bucket = `${opts.prefix}_stream_tokens`;
    const maxAgeMs = ttlSec * 1000 + BUCKET_MARGIN_MS;
    const kv = await conn.call('stream token bucket', async () => {
      const kv = await conn.js.views.kv(bucket, { history: 1, replicas: opts.replicas, storage: StorageType.File, ttl: maxAgeMs });
      await ensureReplicas(conn.jsm, `KV_${bucket}`, opts.replicas, log);
      await ensureMaxAge(conn, `KV_${bucket}`, maxAgeMs, log);
      return kv;
    });
    return new SharedStreamTokens(conn, kv, ttlSec, maxPerKey, log);
  }

  async issue(owner: Owner, now = Date.now()): Promise<IssuedToken | null> {
    if (!this.issued.allows(owner.key_id, now)) return null;
    const { issued, digest, entry } = newToken(owner, this.ttlSec, now);
    await this.conn.call('stream token issue', () => this.kv.create(digest, JSON.stringify(entry)));
    this.issued.add(digest, entry);
    return issued;
  }

  async redeem(token: string, now = Date.now()): Promise<Owner | null> {
    const digest = tokenDigest(token);
    return this.conn.call('stream token redeem', async () => {
      const e = await this.kv.get(digest);
      if (!e || e.operation !== 'PUT') return null;
      try {
        await this.kv.purge(digest, { previousSeq: e.revision });
      } catch (err) {
        // Another node redeemed it between our read and our purge.
        if (apiErrorCode(err) === WRONG_LAST_SEQUENCE) return null;
        throw err;
      }
      this.issued.take(digest);
      const entry = parseEntry(e.string());
      if (!entry) this.log.warn({ key: digest.slice(0, 8) }, 'stream token: a malformed entry in the shared bucket was refused');
      return entry && entry.expiresAt > now ? entry.owner : null;
    });
  }
}

/** The bucket keeps entries at least `maxAgeMs` (another node may have created it with a shorter token lifetime). */
async function ensureMaxAge(conn: NatsConn, stream: string, maxAgeMs: number, log: NatsLogger): Promise<void> {
  const info = await conn.jsm.streams.info(stream);
  if (info.config.max_age >= nanos(maxAgeMs)) return;
  try {
    await conn.jsm.streams.update(stream, { ...info.config, max_age: nanos(maxAgeMs) });
    log.info({ stream, max_age_ms: maxAgeMs }, 'raised the stream-token bucket max age to this node\'s token lifetime');
  } catch (err) {
    log.warn({ stream, err: (err as Error).message }, 'could not raise the stream-token bucket max age: tokens may expire early');
  }
}

function parseEntry(text: string): TokenEntry | null {
  try {
    const v = JSON.parse(text) as Partial<TokenEntry> & { owner?: Partial<Owner> };
    const o = v.owner;
    if (typeof v.expiresAt !== 'number' || !o || typeof o.key_id !== 'string' || typeof o.organization_id !== 'string' || typeof o.project_id !== 'string') return null;
    return { expiresAt: v.expiresAt, owner: { key_id: o.key_id, organization_id: o.organization_id, project_id: o.project_id } };
  } catch {
    return null;
  }
}
