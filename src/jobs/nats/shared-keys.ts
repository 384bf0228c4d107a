/**
 * Distributed mode: do all nodes sign with the same keys? Download requests and callbacks
 * must be signed alike on every node (a file host or receiver verifies against one key), but
 * whether nodes share DATA_DIR/keys or SIGNING_KEY_FILE / CALLBACK_SECRET_FILE cannot be seen
 * from one node. So each node records fingerprints of its keys (never the keys) in a small KV
 * bucket, `<prefix>_nodes`, and warns when they differ from another node's. Entries expire
 * after a day and a node removes its own when it stops, so stopped nodes are not compared.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { type KV, StorageType } from 'nats';
import type { NatsConn, NatsLogger } from './connection';

/** Fingerprints of a node's signing keys (public values: a key id, a hash). */
export interface KeyFingerprints {
  /** Download-request signing key: its JWK thumbprint (kid). */
  signing: string;
  /** Callback secrets: a hash of one derived secret. */
  callbacks: string;
}

const ENTRY_TTL_MS = 24 * 3600_000;

/** What each fingerprint signs, and the setting that makes it the same everywhere. */
const KINDS: Record<keyof KeyFingerprints, { what: string; setting: string }> = {
  signing: { what: 'download requests', setting: 'SIGNING_KEY_FILE (docs/download.md)' },
  callbacks: { what: 'callbacks', setting: 'CALLBACK_SECRET_FILE (docs/api.md)' },
};

/**
 * Records this node's fingerprints and warns for each kind of key that another live node
 * signs with differently. Resolves to a function that removes this node's entry (on stop).
 * Never throws: a failure here must not stop a node, it is logged.
 */
export async function checkSharedKeys(
  conn: NatsConn,
  opts: { prefix: string; replicas: number },
  mine: KeyFingerprints,
  log: NatsLogger,
): Promise<() => Promise<void>> {
  const id = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`.replace(/[^-\w]/g, '_');
  let kv: KV;
  try {
    kv = await conn.js.views.kv(`${opts.prefix}_nodes`, { history: 1, replicas: opts.replicas, storage: StorageType.File, ttl: ENTRY_TTL_MS });
    await kv.put(id, JSON.stringify(mine));
    const others = await otherNodes(kv, id);
    for (const key of Object.keys(KINDS) as Array<keyof KeyFingerprints>) {
      const differing = others.filter((o) => o[key] !== mine[key]).length;
      const { what, setting } = KINDS[key];
      if (differing > 0) log.warn({ key, differing, others: others.length }, `this node signs ${what} with other keys than ${differing} of the ${others.length} other node(s): give every node the same ${setting}`);
    }
    log.info({ others: others.length }, 'signing keys compared with the other nodes');
  } catch (err) {
    log.warn({ err: String(err) }, 'could not compare signing keys with the other nodes');
    return async () => {};
  }
  return async () => {
    await kv.delete(id).catch(() => undefined);
  };
}

async function otherNodes(kv: KV, id: string): Promise<KeyFingerprints[]> {
  // All keys first: a get() inside the keys() iteration can end that iteration early.
  const keys: string[] = [];
  for await (const key of await kv.keys()) if (key !== id) keys.push(key);
  const out: KeyFingerprints[] = [];
  for (const key of keys) {
    const entry = await kv.get(key);
    if (!entry || entry.operation !== 'PUT') continue;
    try {
      out.push(JSON.parse(entry.string()) as KeyFingerprints);
    } catch {
      // another version's entry: not comparable
    }
  }
  return out;
}
