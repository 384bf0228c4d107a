/**
 * File analysis orchestration: decode + front end (src/audio FileAnalyzer) -> windowed
 * model runners (worker pool) -> per-step outputs -> post-processing (src/analysis).
 * Memory: the features of at most a few windows plus per-step outputs (a few floats per
 * 64 ms step); never the whole audio.
 */
import type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from '../audio/types';
import { AurisError } from '../analysis/errors';
import { AnalysisOptions, normalizeAnalysisOptions, selectChannels, STEP_MS } from '../analysis/options';
import { modelsToRun } from '../analysis/policies';
import { buildChannelResult, ChannelResult } from '../analysis/postprocess';
import { InferenceEngine, sharedEngine } from '../inference/engine';
import { StepBuffer } from '../inference/step-buffer';
import type { ModelInfo } from '../inference/registry';
import type { WindowedRunner } from '../inference/runner';
import { defaultOpen, FileAnalyzerLike, OpenFileAnalyzer } from './audio';

export interface AnalyzeFileOptions {
  /** Model names (array or comma-separated). */
  models: readonly string[] | string;
  /** ms, a positive multiple of 64. */
  outputPeriodMs: number | string;
  /** Analyse only this channel (0-based). */
  channel?: number | null;
  includeSummary?: boolean;
  includeTransitions?: boolean;
  includeRaw?: boolean;
  /** Silence gate in dBFS, [-120, 0] (default -50). */
  volumeThreshold?: number | null;
  /** Reject files longer than this, combined over the analysed channels (passed to the decoder). */
  maxDurationSec?: number;
  /** Audio decoded per read, seconds (decoder default when unset). */
  chunkSeconds?: number;
  /** Models directory, used when no engine is given (default: $AURIS_MODELS_DIR or <package>/models). */
  modelsDir?: string;
  /** Output steps per model call (default: the engine's, 1024). */
  windowSteps?: number;
}

export interface AnalyzeHooks {
  /** Called with 0..1 (decoded steps / expected steps), at most every 1 %; 1 at the end. */
  onProgress?(fraction: number): void;
  /** Called once the file header is read. */
  onInfo?(info: AudioInfo): void;
  /** Cancels the analysis: rejects with AurisError ABORTED. */
  signal?: AbortSignal;
  /** Engine to use (default: the shared engine of options.modelsDir). */
  engine?: InferenceEngine;
  /** Decoder (default: src/audio FileAnalyzer.open). Tests inject synthetic FeatureChunks here. */
  open?: OpenFileAnalyzer;
}

export interface FileAnalysis {
  /** `result.channels` of the results envelope. */
  channels: Record<string, ChannelResult>;
  info: AudioInfo;
  /** The validated options (models = reported models). */
  options: AnalysisOptions;
  /** Models that ran (reported + speech when gating). */
  modelsRun: string[];
  /** 64 ms steps per analysed channel. */
  steps: Record<string, number>;
  /** Duration used for fractions and the last transition end, ms. */
  durationMs: number;
}

interface ChannelState {
  channel: number;
  steps: number;
  levels: StepBuffer;
  probs: Map<string, StepBuffer>;
  runners: WindowedRunner[];
}

function aborted(signal: AbortSignal | undefined): AurisError {
  const reason = signal?.reason;
  const detail = reason instanceof Error ? reason.message : reason !== undefined ? String(reason) : '';
  return new AurisError('ABORTED', `analysis cancelled${detail ? `: ${detail}` : ''}`);
}

/** Resolves like `p`, or rejects with ABORTED as soon as `signal` fires. */
function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(aborted(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(aborted(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/** Expected 64 ms steps of a channel: ceil(frames at 16 kHz / 1024); 0 when the header does not say (frames -1). */
export function expectedSteps(info: Pick<AudioInfo, 'frames' | 'sampleRate'>): number {
  if (!(info.sampleRate > 0) || !(info.frames > 0)) return 0;
  return Math.ceil(Math.round((info.frames * 16000) / info.sampleRate) / 1024);
}

/** Windows decoded ahead of inference (bounds memory, lets decoding overlap inference). */
const MAX_IN_FLIGHT_READS = 2;

/**
 * Analyses one audio file. Options are validated first (INVALID_ARGUMENT, UNKNOWN_MODEL);
 * a channel the file lacks -> INVALID_CHANNEL; decoder errors (AudioError codes) pass through.
 */
export async function analyzeFile(source: AudioSource, options: AnalyzeFileOptions, hooks: AnalyzeHooks = {}): Promise<FileAnalysis> {
  const { signal } = hooks;
  if (signal?.aborted) throw aborted(signal);
  const engineOptions: { modelsDir?: string } = {};
  if (options.modelsDir !== undefined) engineOptions.modelsDir = options.modelsDir;
  const engine = hooks.engine ?? (await sharedEngine(engineOptions));
  const opts = normalizeAnalysisOptions(
    {
      models: options.models,
      outputPeriodMs: options.outputPeriodMs,
      channel: options.channel ?? undefined,
      includeSummary: options.includeSummary ?? false,
      includeTransitions: options.includeTransitions ?? false,
      includeRaw: options.includeRaw ?? false,
      volumeThreshold: options.volumeThreshold ?? undefined,
    },
    engine.models(),
  );
  const run = modelsToRun(opts.models);
  const infos: ModelInfo[] = engine.registry.resolve(run);

  const openOptions: OpenOptions = {};
  if (opts.channel !== undefined) openOptions.channel = opts.channel;
  if (options.chunkSeconds !== undefined) openOptions.chunkSeconds = options.chunkSeconds;
  if (options.maxDurationSec !== undefined) openOptions.maxDurationSec = options.maxDurationSec;
  const open = hooks.open ?? defaultOpen();
  const opening = Promise.resolve().then(() => open(source, openOptions));
  let analyzer: FileAnalyzerLike;
  try {
    analyzer = await abortable(opening, signal);
  } catch (e) {
    // Cancelled while opening: close the decoder once it is open.
    opening.then((a) => a.close(), () => undefined);
    throw e;
  }
  try {
    const info = analyzer.info;
    hooks.onInfo?.(info);
    const channels = selectChannels(info.channels, opts.channel);
    const expected = expectedSteps(info);
    // Unknown length (frames -1): no intermediate progress, just 0 and 1.
    const totalSteps = expected * channels.length;

    const states = new Map<number, ChannelState>();
    for (const ch of channels) {
      const st: ChannelState = { channel: ch, steps: 0, levels: new StepBuffer(1, expected + 1), probs: new Map(), runners: [] };
      for (const m of infos) {
        const store = new StepBuffer(m.rawKeys.length, expected + 1);
        st.probs.set(m.name, store);
        const runnerOptions: { windowSteps?: number } = {};
        if (options.windowSteps !== undefined) runnerOptions.windowSteps = options.windowSteps;
        st.runners.push(engine.runner(m, (_start, probs) => store.append(probs), runnerOptions));
      }
      states.set(ch, st);
    }

    let decoded = 0;
    let lastProgress = -1;
    const progress = (f: number): void => {
      if (!hooks.onProgress) return;
      const p = Math.min(f, 1);
      if (p >= 1 || p - lastProgress >= 0.01) {
        lastProgress = p;
        hooks.onProgress(p);
      }
    };
    progress(0);

    const inFlight: Promise<unknown>[] = [];
    for (;;) {
      if (signal?.aborted) throw aborted(signal);
      const chunks: FeatureChunk[] | null = await abortable(analyzer.read(), signal);
      if (chunks === null) break;
      const pushes: Promise<void>[] = [];
      for (const chunk of chunks) {
        const st = states.get(chunk.channel);
        if (!st) throw new Error(`decoder returned channel ${chunk.channel}, which was not requested`);
        if (chunk.startStep !== st.steps) {
          throw new Error(`decoder returned steps from ${chunk.startStep} for channel ${chunk.channel}, expected ${st.steps}`);
        }
        if (chunk.steps === 0) continue;
        st.levels.append(chunk.levels.subarray(0, chunk.steps));
        for (const r of st.runners) pushes.push(r.push(chunk.features, chunk.steps));
        st.steps += chunk.steps;
        decoded += chunk.steps;
      }
      const all = Promise.all(pushes);
      all.catch(() => undefined);
      inFlight.push(all);
      if (inFlight.length > MAX_IN_FLIGHT_READS) await abortable(inFlight.shift()!, signal);
      if (totalSteps > 0) progress(Math.min(0.99, decoded / totalSteps));
    }
    const ends: Promise<void>[] = [];
    for (const st of states.values()) for (const r of st.runners) ends.push(r.end());
    await abortable(Promise.all([...inFlight, ...ends]), signal);

    // Real duration from the header; unknown (frames -1) -> whole steps.
    const durationMs = info.sampleRate > 0 && info.frames > 0 ? (info.frames / info.sampleRate) * 1000 : 0;
    const rawKeys = engine.registry.rawKeys();
    const result: Record<string, ChannelResult> = {};
    const steps: Record<string, number> = {};
    for (const st of states.values()) {
      if (st.steps === 0) throw new AurisError('INVALID_ARGUMENT', `channel ${st.channel} has no audio`);
      const probs: Record<string, Float32Array> = {};
      for (const [name, store] of st.probs) probs[name] = store.view();
      result[String(st.channel)] = buildChannelResult(
        { steps: st.steps, durationMs: durationMs > 0 ? durationMs : st.steps * STEP_MS, levels: st.levels.view(), probs },
        {
          models: opts.models,
          rawKeys,
          outputPeriodMs: opts.outputPeriodMs,
          volumeThreshold: opts.volumeThreshold,
          includeSummary: opts.includeSummary,
          includeTransitions: opts.includeTransitions,
          includeRaw: opts.includeRaw,
        },
      );
      steps[String(st.channel)] = st.steps;
    }
    progress(1);
    const maxSteps = Math.max(...Object.values(steps));
    return {
      channels: result,
      info,
      options: opts,
      modelsRun: run,
      steps,
      durationMs: durationMs > 0 ? durationMs : maxSteps * STEP_MS,
    };
  } finally {
    await analyzer.close();
  }
}
