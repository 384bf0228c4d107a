/** Messages between ClusteringThread (main thread, clustering-thread.ts) and its thread (clustering-worker.ts). */
import type { EmbeddedWindow } from './clustering';
import type { FileCounts } from './file-map';
import type { FreeClusters } from './free-recluster';
import type { CountedClusters } from './recluster';
import type { SpeakerMapInfo } from './manifest';
import type { EmbeddingSumsData } from './speaker-gender';

/** Embedded windows side by side: their indices and their embeddings ([n][dim]), two buffers that travel without a copy. */
export interface PackedWindows {
  index: Int32Array;
  embeddings: Float64Array;
  dim: number;
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

export function packWindows(windows: readonly EmbeddedWindow[]): PackedWindows {
  const rows = packRows(windows.map((w) => w.embedding));
  return { index: Int32Array.from(windows, (w) => w.window), embeddings: rows.packed, dim: rows.dim };
}

export function unpackWindows(p: PackedWindows): EmbeddedWindow[] {
  return unpackRows(p.embeddings, p.dim).map((embedding, i) => ({ window: p.index[i]!, embedding }));
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
