/** Messages between ClusteringThread (main thread, clustering-thread.ts) and its thread (clustering-worker.ts). */
import type { EmbeddedWindow } from './clustering';
import type { FileCounts } from './file-map';
import type { FreeClusters } from './free-recluster';
import type { CountedClusters } from './recluster';
import type { SpeakerMapInfo } from './manifest';
import type { EmbeddingSumsData } from './speaker-gender';

/**
 * Embedded windows side by side: their indices and their embeddings ([n][dim], in chunks of whole rows), buffers
 * that travel to the thread without a copy.
 */
export interface PackedWindows {
  index: Int32Array;
  chunks: Float64Array[];
  dim: number;
}

/** Rows per chunk of a WindowStore (192-float embeddings: 1.5 MB). */
const CHUNK_ROWS = 1024;

/**
 * A file channel's embedded windows, packed as they arrive (file-map.ts): handed to the clustering thread
 * whole (take), they leave this thread instead of being copied, so an hour's 14 MB is never held twice.
 */
export class WindowStore {
  private index: number[] = [];
  private chunks: Float64Array[] = [];

  /** The next window (unit embedding), in window order. */
  push(window: number, embedding: Float64Array): void {
    const dim = embedding.length;
    const row = this.index.length % CHUNK_ROWS;
    if (row === 0) this.chunks.push(new Float64Array(CHUNK_ROWS * dim));
    this.chunks[this.chunks.length - 1]!.set(embedding, row * dim);
    this.index.push(window);
  }

  /** The windows as EmbeddedWindows (views on the store). */
  windows(): EmbeddedWindow[] {
    return unpackWindows(this.packed());
  }

  /** Hands the windows over (the store is empty afterwards). */
  take(): PackedWindows {
    const out = this.packed();
    this.index = [];
    this.chunks = [];
    return out;
  }

  private packed(): PackedWindows {
    const dim = this.chunks.length > 0 ? this.chunks[0]!.length / CHUNK_ROWS : 0;
    return { index: Int32Array.from(this.index), chunks: [...this.chunks], dim };
  }
}

export type ClusteringRequest = {
  id: number;
  /** The model's speaker map, by an id; `map` is sent with the first request that uses it. */
  mapId: number;
  map?: SpeakerMapInfo;
  windows: PackedWindows;
} & (
  | { type: 'file'; steps: number; speech: Uint8Array; counts: FileCounts }
  /** `whitened`: the same windows as compared ([n][dim]), where the model whitens. */
  | { type: 'free'; cap: number; whitened?: Float64Array }
  | { type: 'counted'; speakers: number }
);

export type ClusteringReply =
  | { type: 'file'; id: number; keys: string[]; probs: Float32Array; embeddings: EmbeddingSumsData }
  | { type: 'free'; id: number; clusters: FreeClusters }
  | { type: 'counted'; id: number; clusters: CountedClusters }
  | { type: 'error'; id: number; message: string };

/** Windows packed in one chunk (a copy). */
export function packWindows(windows: readonly EmbeddedWindow[]): PackedWindows {
  const rows = packRows(windows.map((w) => w.embedding));
  return { index: Int32Array.from(windows, (w) => w.window), chunks: [rows.packed], dim: rows.dim };
}

/** The packed windows as EmbeddedWindows (views on the chunks, not copies). */
export function unpackWindows(p: PackedWindows): EmbeddedWindow[] {
  const rows = p.chunks.flatMap((c) => unpackRows(c, p.dim)).slice(0, p.index.length);
  return rows.map((embedding, i) => ({ window: p.index[i]!, embedding }));
}

/** Rows of one length side by side in one buffer. */
export function packRows(rows: readonly Float64Array[]): { packed: Float64Array; dim: number } {
  const dim = rows.length > 0 ? rows[0]!.length : 0;
  const packed = new Float64Array(rows.length * dim);
  rows.forEach((r, i) => packed.set(r, i * dim));
  return { packed, dim };
}

/** The rows of a packed buffer (views on it, not copies). */
export function unpackRows(packed: Float64Array, dim: number): Float64Array[] {
  const n = dim > 0 ? packed.length / dim : 0;
  return Array.from({ length: n }, (_, i) => packed.subarray(i * dim, (i + 1) * dim));
}
