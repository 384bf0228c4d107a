/**
 * The speaker map's whitening (training/diarization/whitening.py): a fixed matrix learnt from
 * labelled voices that shrinks the directions in which one voice moves (emotion, channel, words).
 * Streams (speakers 1.4.0) whiten each unit embedding before comparing it with their speakers; a
 * file job clusters with the recording's mean taken away instead (file-map.ts), which a stream
 * cannot do before its first speakers are fixed, and then merges speakers whose whitened centroids
 * are alike (alike-merge.ts, speakers 1.5.0; 1.6.0 a learnt rule).
 */
import fs from 'node:fs';
import path from 'node:path';
import { AurisError } from '../errors';
import { dotsInto, normalise } from './clustering';

/** Rows of the matrix: compared = normalise(M e). */
export type Whitening = readonly Float64Array[];

/** Reads `name` (a plain file name beside the manifest `file`): {"dim": d, "matrix": [[d numbers] x d]}. */
export function loadWhitening(dir: string, name: string, dim: number, file: string): Whitening {
  const fail = (problem: string, cause?: unknown): AurisError =>
    new AurisError('MODEL_LOAD_FAILED', `${file}: "speaker_map.whitening" ${problem}`, { file }, cause === undefined ? undefined : { cause });
  if (!/^[A-Za-z0-9_.-]+\.json$/.test(name)) throw fail(`must be a plain .json file name, got ${JSON.stringify(name)}`);
  let doc: unknown;
  try {
    doc = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
  } catch (e) {
    throw fail(`cannot be read (${(e as Error).message})`, e);
  }
  const rows = (doc as { matrix?: unknown } | null)?.matrix;
  const ok =
    Array.isArray(rows) &&
    rows.length === dim &&
    rows.every((r) => Array.isArray(r) && r.length === dim && r.every((x) => typeof x === 'number' && Number.isFinite(x)));
  if (!ok) throw fail(`must hold "matrix": ${dim} rows of ${dim} finite numbers (the encoder's dim)`);
  return (rows as number[][]).map((r) => Float64Array.from(r));
}

/**
 * normalise(M e), each output summed left to right (cluster.py `whitened` does the same sums), into `out`: a new
 * array unless given (a scratch where the caller uses it once; never e itself).
 */
export function whiten(m: Whitening, e: Float64Array, out: Float64Array = new Float64Array(m.length)): Float64Array {
  // dotsInto: four rows at a time, each still summed left to right (a monomorphic loop over typed arrays;
  // Float64Array.from with a callback ran ~4x slower)
  dotsInto(e, m, m.length, out);
  return normalise(out, out);
}
