/**
 * A file job's read loop: reads the front end to its end and pushes each chunk to its channel's
 * model runners and encoder stages, at most MAX_IN_FLIGHT_READS reads ahead of them. That bound
 * is what keeps a long job's memory to a few reads of audio (docs/benchmarks.md, Memory).
 */
import type { FeatureChunk } from '../audio/types';
import type { EncoderStage } from '../inference/encoder-stage';
import type { WindowedRunner } from '../inference/runner';
import type { StepBuffer } from '../inference/step-buffer';
import type { FileFrontendLike } from './audio';
import { aborted, abortable } from './abort';

/** One analysed channel as the read loop sees it. */
export interface FedChannel {
  channel: number;
  /** Steps pushed so far. */
  steps: number;
  levels: StepBuffer;
  runners: Pick<WindowedRunner, 'push' | 'end'>[];
  /** Encoder stages of the models with encoder views (src/inference/views.ts) and of the speaker map. */
  stages: EncoderStage[];
}

/** Windows decoded ahead of inference (bounds memory, lets decoding overlap inference). */
const MAX_IN_FLIGHT_READS = 2;

/**
 * Reads the front end to its end and pushes each chunk to the channel's runners, at most
 * MAX_IN_FLIGHT_READS reads ahead of inference; then ends the runners and waits for them.
 * `totalSteps` 0 (unknown length): no intermediate progress, just 0 and 1.
 */
export async function feedRunners(
  frontend: Pick<FileFrontendLike, 'read'>,
  states: Map<number, FedChannel>,
  totalSteps: number,
  progress: (fraction: number) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  progress(0);
  let decoded = 0;
  const inFlight: Promise<unknown>[] = [];
  for (;;) {
    if (signal?.aborted) throw aborted(signal);
    const chunks: FeatureChunk[] | null = await abortable(frontend.read(), signal);
    if (chunks === null) break;
    const pushes: Promise<void>[] = [];
    for (const chunk of chunks) decoded += pushChunk(states, chunk, pushes);
    const all = Promise.all(pushes);
    all.catch(() => undefined);
    inFlight.push(all);
    if (inFlight.length > MAX_IN_FLIGHT_READS) await abortable(inFlight.shift()!, signal);
    if (totalSteps > 0) progress(Math.min(0.99, decoded / totalSteps));
  }
  const ends: Promise<void>[] = [];
  for (const st of states.values()) for (const r of [...st.runners, ...st.stages]) ends.push(r.end());
  await abortable(Promise.all([...inFlight, ...ends]), signal);
}

/** Appends one chunk to its channel's levels and runners (pushes collected); returns its steps. */
function pushChunk(states: Map<number, FedChannel>, chunk: FeatureChunk, pushes: Promise<void>[]): number {
  const st = states.get(chunk.channel);
  if (!st) throw new Error(`decoder returned channel ${chunk.channel}, which was not requested`);
  if (chunk.startStep !== st.steps) {
    throw new Error(`decoder returned steps from ${chunk.startStep} for channel ${chunk.channel}, expected ${st.steps}`);
  }
  if (chunk.steps === 0) return 0;
  st.levels.append(chunk.levels.subarray(0, chunk.steps));
  const runs = st.runners.map((r) => r.push(chunk.features, chunk.steps));
  pushes.push(...runs);
  for (const e of st.stages) {
    const pushed = e.push(chunk.levels, chunk.pcm, chunk.steps);
    // a speech-gated stage decides this chunk's windows once the speech model's outputs are in:
    // the read is done when those windows are embedded too (else reads run ahead of the encoder)
    pushes.push(e.speechGated ? Promise.all([pushed, ...runs]).then(() => e.settled()) : pushed);
  }
  st.steps += chunk.steps;
  return chunk.steps;
}
