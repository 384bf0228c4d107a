/**
 * Windows clustered into speakers the way a file job does it without a count: centred on their mean
 * (when the model centres), long clusters the learnt pair rule calls two voices kept apart, and
 * speakers it calls one voice merged after (alike-merge.ts). File jobs cluster a recording's speech
 * windows with it (file-map.ts); live streams without a count re-cluster their recent windows with
 * it (free-recluster.ts). training/diarization/cluster.py free_clusters / file_clusters is the same
 * arithmetic.
 */
import { centredOn, clusterWindows, meanEmbedding, type EmbeddedWindow, type FileClustering } from './clustering';
import type { SpeakerMapInfo } from './manifest';
import { keepApartBy, mergeAlike } from './alike-merge';

/**
 * `compared`: the windows as clustered (centred or not); `plain`: the same windows' unit embeddings,
 * uncentred; `whitened`, where the caller keeps them, the same whitened (whitening.ts). With a count the
 * pair rule stays out (the count decides). Returns the clustering and the speakers' centroids over
 * `compared` (after the merge, when there was one).
 */
export function clusterSpeakers(
  compared: readonly EmbeddedWindow[],
  plain: readonly Float64Array[],
  map: SpeakerMapInfo,
  maxSpeakers: number,
  numSpeakers?: number,
  whitened?: readonly Float64Array[],
): { clustering: FileClustering; centroids: Float64Array[] } {
  const { whitening, alikeMerge } = map;
  const keepApart = whitening && alikeMerge ? keepApartBy(alikeMerge, whitening, plain, whitened) : undefined;
  const clustering = clusterWindows(compared, map.params, maxSpeakers, numSpeakers, keepApart);
  let centroids = clustering.centroids;
  if (numSpeakers === undefined && whitening && alikeMerge && clustering.speakers > 1) {
    centroids = mergeAlike(clustering.assignment, clustering.speakers, plain, compared.map((w) => w.embedding), whitening, alikeMerge, whitened);
  }
  return { clustering, centroids };
}

/**
 * Unit, uncentred windows clustered freely (no count): the speakers' centroids over the compared
 * windows, those windows, and the mean taken away from them (zeros when the model does not centre).
 * `whitened`: the windows whitened, where the caller keeps them (else whitened here as needed).
 */
export function clusterFreely(
  windows: readonly EmbeddedWindow[],
  map: SpeakerMapInfo,
  maxSpeakers: number,
  whitened?: readonly Float64Array[],
): { centroids: Float64Array[]; compared: EmbeddedWindow[]; mean: Float64Array } {
  const dim = windows.length > 0 ? windows[0]!.embedding.length : 0;
  const mean = map.centre && windows.length > 0 ? meanEmbedding(windows) : new Float64Array(dim);
  const compared = map.centre ? windows.map((w) => ({ window: w.window, embedding: centredOn(w.embedding, mean) })) : [...windows];
  const { centroids } = clusterSpeakers(compared, windows.map((w) => w.embedding), map, maxSpeakers, undefined, whitened);
  return { centroids, compared, mean };
}
