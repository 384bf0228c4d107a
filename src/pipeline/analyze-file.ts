/**
 * File analysis orchestration: decode + front end (src/audio FileFrontend) -> windowed
 * model runners (worker pool) -> per-step outputs -> post-processing (src/analysis).
 * Memory: the features of at most a few windows plus per-step outputs (a few floats per
 * 64 ms step); never the whole audio.
 */
import type { AudioInfo, AudioSource, OpenOptions } from '../audio/types';
import { AurisError } from '../errors';
import { type AnalysisRequest, type AnalysisRequestInput, parseAnalysisRequest, selectChannels, STEP_MS, volumeThresholdOf } from '../analysis/options';
import { modelsToRun, SPEECH_LABEL, SPEECH_MODEL } from '../analysis/policies';
import { argmax, buildChannelResult, type ChannelResult, type PostProcessOptions } from '../analysis/postprocess';
import { InferenceEngine, sharedEngine } from '../inference/engine';
import { StepBuffer } from '../inference/step-buffer';
import type { ModelInfo } from '../inference/registry';
import type { OutputFn, WindowedRunner } from '../inference/runner';
import { speechGatedModels } from '../inference/views';
import { trimNativeMemory } from '../audio';
import { defaultOpen, type FileFrontendLike, type OpenFileFrontend } from './audio';
import { FileSpeakerMap } from '../speakers/file-map';
import type { SpeakerMapInfo } from '../speakers/manifest';
import { requestedSpeakerGender, speakerGenderSummary } from '../speakers/speaker-gender';
import { aborted, abortable } from './abort';
import { feedRunners, type FedChannel } from './feed';

/** Progress, audio facts and cancellation of one analysis (the job worker's view too). */
export interface AnalyzeHooks {
  /** Called with 0..1 (decoded steps / expected steps), at most every 1 %; 1 at the end. */
  onProgress?(fraction: number): void;
  /** Called once the file header is read. */
  onInfo?(info: AudioInfo): void;
  /** Cancels the analysis: rejects with AurisError ABORTED. */
  signal?: AbortSignal;
}

/** How to run a file analysis (what to analyse is the AnalysisRequest). */
export interface AnalyzeFileSettings extends AnalyzeHooks {
  /** Engine to use (default: the shared engine of `modelsDir`). */
  engine?: InferenceEngine;
  /** Models directory, used when no engine is given (default: $AURIS_MODELS_DIR or <package>/models). */
  modelsDir?: string;
  /** Front end (default: src/audio FileFrontend.open). Tests inject synthetic FeatureChunks here. */
  open?: OpenFileFrontend;
  /** Reject files longer than this, combined over the analysed channels (passed to the front end). */
  maxDurationSec?: number;
  /** Audio decoded per read, seconds (front end default when unset). */
  chunkSeconds?: number;
  /** Output steps per model call (default: the engine's, 1024). */
  windowSteps?: number;
}

export interface FileAnalysis {
  /** `result.channels` of the results envelope. */
  channels: Record<string, ChannelResult>;
  info: AudioInfo;
  /** The validated request (models = reported models). */
  request: AnalysisRequest;
  /** Models that ran (reported + speech when gating). */
  modelsRun: string[];
  /** 64 ms steps per analysed channel. */
  steps: Record<string, number>;
  /** Duration used for fractions and the last transition end, ms. */
  durationMs: number;
}

interface ChannelState extends FedChannel {
  probs: Map<string, StepBuffer>;
  runners: WindowedRunner[];
  /** The speaker map of this channel, when `speakers` runs (src/speakers). */
  speakers?: { model: string; info: SpeakerMapInfo; map: FileSpeakerMap };
}

/** Expected 64 ms steps of a channel: ceil(frames at 16 kHz / 1024); 0 when the header does not say (frames -1). */
export function expectedSteps(info: Pick<AudioInfo, 'frames' | 'sampleRate'>): number {
  if (!(info.sampleRate > 0) || !(info.frames > 0)) return 0;
  return Math.ceil(Math.round((info.frames * 16000) / info.sampleRate) / 1024);
}

/** Analysed audio (all channels, 64 ms steps) from which a job gives the C allocator's free memory back: 10 minutes. */
const RELEASE_FROM_STEPS = (10 * 60 * 1000) / STEP_MS;

/**
 * Gives glibc's freed memory back to the system (malloc_trim on a pool thread, src/audio) once a long file's stage is
 * over: the inference's inputs and outputs, then the speaker clustering's copies, are freed but stay in the process's
 * RSS as reusable heap, while the next stage's JavaScript objects take new pages. On a 1-hour file with the speaker
 * map this was ~35 MiB after decoding and ~60 MiB after the clustering: the job's peak 303-319 -> 258-271 MiB
 * (docs/benchmarks.md, Memory). Short files skip it (their heap is small, and the trim locks allocation meanwhile).
 */
async function releaseFreedMemory(states: Map<number, ChannelState>): Promise<void> {
  if (isLong(states)) await trimNativeMemory();
}

/** At least RELEASE_FROM_STEPS analysed (all channels). */
function isLong(states: Map<number, ChannelState>): boolean {
  let steps = 0;
  for (const st of states.values()) steps += st.steps;
  return steps >= RELEASE_FROM_STEPS;
}

/**
 * Analyses one audio file. The request is validated first (INVALID_ARGUMENT, UNKNOWN_MODEL
 * against the engine's models; a validated AnalysisRequest passes unchanged); a channel the
 * file lacks -> INVALID_CHANNEL; front-end errors (AudioError codes) pass through.
 * Stages: prepare -> open the front end -> feed the model runners -> post-process.
 */
export async function analyzeFile(source: AudioSource, input: AnalysisRequestInput, settings: AnalyzeFileSettings = {}): Promise<FileAnalysis> {
  const { signal } = settings;
  if (signal?.aborted) throw aborted(signal);
  const plan = await prepare(input, settings);
  const frontend = await openFrontend(source, plan.request, { ...settings, chunkSeconds: settings.chunkSeconds ?? chunkSecondsFor(plan) });
  const finishEncoding = plan.engine.encoding(plan.infos);
  try {
    const info = frontend.info;
    settings.onInfo?.(info);
    const states = channelStates(plan, selectChannels(info.channels, plan.request.channel), expectedSteps(info), settings.windowSteps);
    const progress = progressReporter(settings.onProgress);
    await feedRunners(frontend, states, expectedSteps(info) * states.size, progress, signal);
    // a long file's audio is embedded: the encoders' sessions go (unless another job embeds) before its clustering
    await finishEncoding(isLong(states));
    await releaseFreedMemory(states);
    // Real duration from the header; unknown (frames -1) -> whole steps.
    const headerMs = info.sampleRate > 0 && info.frames > 0 ? (info.frames / info.sampleRate) * 1000 : 0;
    const { channels, steps } = await postProcess(plan, states, headerMs, signal);
    progress(1);
    const maxSteps = Math.max(...Object.values(steps));
    return { channels, info, request: plan.request, modelsRun: plan.modelsRun, steps, durationMs: headerMs > 0 ? headerMs : maxSteps * STEP_MS };
  } finally {
    await finishEncoding(false);
    await frontend.close();
  }
}

/** What one analysis runs: the validated request, the engine, the models that run. */
interface AnalysisPlan {
  request: AnalysisRequest;
  engine: InferenceEngine;
  /** Reported models + speech when it gates. */
  modelsRun: string[];
  infos: ModelInfo[];
}

async function prepare(input: AnalysisRequestInput, settings: AnalyzeFileSettings): Promise<AnalysisPlan> {
  const engineOptions: { modelsDir?: string } = {};
  if (settings.modelsDir !== undefined) engineOptions.modelsDir = settings.modelsDir;
  const engine = settings.engine ?? (await sharedEngine(engineOptions));
  const request = parseAnalysisRequest(input, engine.models());
  const modelsRun = modelsToRun(request.models);
  return { request, engine, modelsRun, infos: engine.registry.resolve(modelsRun) };
}

/**
 * Audio decoded per read when the plan has the speaker map: its encoder (a window every 6 steps) is then the slowest
 * stage by far, so the reads in flight wait as queued windows of samples (100 KB each); 10 s reads keep about 80 of
 * them queued instead of 180-220 with the front end's 30 s (docs/benchmarks.md, Memory). Not for the networks alone or
 * gender's view (every 16th window): shorter reads give their windowed calls more context to recompute, 5-10 %
 * more CPU time for speech + gender.
 */
const SPEAKER_MAP_CHUNK_SECONDS = 10;

function chunkSecondsFor(plan: AnalysisPlan): number | undefined {
  return plan.infos.some((m) => m.speakerMap) ? SPEAKER_MAP_CHUNK_SECONDS : undefined;
}

/** Opens the front end; cancelled while opening -> ABORTED, and the front end is closed once open. */
async function openFrontend(source: AudioSource, request: AnalysisRequest, settings: AnalyzeFileSettings): Promise<FileFrontendLike> {
  const openOptions: OpenOptions = {};
  if (request.channel !== undefined) openOptions.channel = request.channel;
  if (settings.chunkSeconds !== undefined) openOptions.chunkSeconds = settings.chunkSeconds;
  if (settings.maxDurationSec !== undefined) openOptions.maxDurationSec = settings.maxDurationSec;
  const open = settings.open ?? defaultOpen();
  const opening = Promise.resolve().then(() => open(source, openOptions));
  try {
    return await abortable(opening, settings.signal);
  } catch (e) {
    opening.then((a) => a.close(), () => undefined);
    throw e;
  }
}

/** Output steps per call of the speech model when its outputs gate an encoder view (8.2 s). */
const GATING_SPEECH_WINDOW_STEPS = 128;

/** Per analysed channel: its step buffers and one windowed runner per model that runs. */
function channelStates(plan: AnalysisPlan, channels: number[], expected: number, windowSteps: number | undefined): Map<number, ChannelState> {
  const runnerOptions: { windowSteps?: number } = {};
  if (windowSteps !== undefined) runnerOptions.windowSteps = windowSteps;
  // a speech-gated encoder view holds each window's samples until the speech model has heard its
  // first steps: the speech model then runs in shorter windows, so that it holds less (an hour
  // with every model: 330 MiB peak against 368 with 1024-step windows; the speech model is cheap)
  const speechGated = speechGatedModels(plan.infos, { files: true }).length > 0;
  const gatingSpeechOptions = { ...runnerOptions, windowSteps: Math.min(runnerOptions.windowSteps ?? GATING_SPEECH_WINDOW_STEPS, GATING_SPEECH_WINDOW_STEPS) };
  const states = new Map<number, ChannelState>();
  for (const ch of channels) {
    const st: ChannelState = { channel: ch, steps: 0, levels: new StepBuffer(1, expected + 1), probs: new Map(), runners: [], stages: [] };
    const views = plan.engine.channelViews();
    for (const m of plan.infos) {
      if (m.speakerMap) {
        // no network: the encoder stage's windows are clustered once the channel is read
        const map = new FileSpeakerMap(m.speakerMap);
        st.speakers = { model: m.name, info: m.speakerMap, map };
        views.adopt(plan.engine.speakerStage(m, (o) => map.pushWindow(o)));
        continue;
      }
      const store = new StepBuffer(m.rawKeys.length, expected + 1);
      st.probs.set(m.name, store);
      const sink: OutputFn = (_start, probs) => store.append(probs);
      // the speech model's decisions also gate the encoder views' windows (views.ts speechGate)
      const output = m.name === SPEECH_MODEL ? views.attachSpeech(m, sink, m.rawKeys.indexOf(SPEECH_LABEL)) : views.attach(m, sink);
      st.runners.push(plan.engine.runner(m, output, m.name === SPEECH_MODEL && speechGated ? gatingSpeechOptions : runnerOptions));
    }
    st.stages.push(...views.stages);
    states.set(ch, st);
  }
  return states;
}

/** Calls onProgress with 0..1 at most every 1 % (and always with 1). */
function progressReporter(onProgress: ((fraction: number) => void) | undefined): (fraction: number) => void {
  let last = -1;
  return (f) => {
    if (!onProgress) return;
    const p = Math.min(f, 1);
    if (p >= 1 || p - last >= 0.01) {
      last = p;
      onProgress(p);
    }
  };
}

/** 1 where a 64 ms step is speech as post-processing decides it: the speech model's argmax, and loud enough. */
function speechSteps(plan: AnalysisPlan, probs: Record<string, Float32Array>, levels: Float32Array, steps: number, volumeThreshold: number): Uint8Array {
  const keys = plan.engine.registry.rawKeys()[SPEECH_MODEL]!;
  const C = keys.length;
  const k = keys.indexOf(SPEECH_LABEL);
  const p = probs[SPEECH_MODEL]!;
  const out = new Uint8Array(steps);
  for (let s = 0; s < steps; s++) {
    if (levels[s]! >= volumeThreshold && argmax(p.subarray(s * C, (s + 1) * C)) === k) out[s] = 1;
  }
  return out;
}

/** Each channel's steps through post-processing (src/analysis) into its SPEC channel result. */
async function postProcess(
  plan: AnalysisPlan,
  states: Map<number, ChannelState>,
  headerMs: number,
  signal: AbortSignal | undefined,
): Promise<{ channels: Record<string, ChannelResult>; steps: Record<string, number> }> {
  const { request } = plan;
  const options: PostProcessOptions = {
    models: request.models,
    rawKeys: plan.engine.registry.rawKeys(),
    confidenceTemperature: plan.engine.registry.confidenceTemperatures(),
    outputPeriodMs: request.outputPeriodMs,
    volumeThreshold: volumeThresholdOf(request),
    includeSummary: request.includeSummary,
    includeTransitions: request.includeTransitions,
    includeRaw: request.includeRaw,
  };
  const channels: Record<string, ChannelResult> = {};
  const steps: Record<string, number> = {};
  // each speaker's gender in the speakers' summary, when gender is requested too (speaker-gender.ts)
  const genderHead = request.includeSummary ? requestedSpeakerGender(plan.infos, request.models) : undefined;
  for (const st of states.values()) {
    if (st.steps === 0) throw new AurisError('INVALID_ARGUMENT', `channel ${st.channel} has no audio`);
    const probs: Record<string, Float32Array> = {};
    for (const [name, store] of st.probs) probs[name] = store.view();
    let channelOptions = options;
    let speakerGender: Record<string, number> | undefined;
    if (st.speakers) {
      // the speakers found in this channel are its raw keys
      const counts: { numSpeakers?: number; maxSpeakers?: number } = {};
      if (request.numSpeakers !== undefined) counts.numSpeakers = request.numSpeakers;
      if (request.maxSpeakers !== undefined) counts.maxSpeakers = request.maxSpeakers;
      // on the clustering thread: an hour's windows take seconds, which the main thread's other jobs and streams would wait
      const speech = speechSteps(plan, probs, st.levels.view(), st.steps, options.volumeThreshold);
      // (the signal also ends the thread's work on a cancelled job: an hour's clustering is not finished for no one)
      const found = await abortable(plan.engine.clustering.files.file(st.speakers.info, st.speakers.map.take(), st.steps, speech, counts, signal), signal);
      // the clustering's copies and the thread's buffers, before this job's result takes their place
      await plan.engine.clustering.files.exited();
      await releaseFreedMemory(states);
      probs[st.speakers.model] = found.probs;
      channelOptions = { ...options, rawKeys: { ...options.rawKeys, [st.speakers.model]: found.keys } };
      if (genderHead) speakerGender = speakerGenderSummary(genderHead, found.embeddings, found.keys.length);
    }
    const durationMs = headerMs > 0 ? headerMs : st.steps * STEP_MS;
    const result = buildChannelResult({ steps: st.steps, durationMs, levels: st.levels.view(), probs }, channelOptions);
    // each speaker's gender follows the speakers' fractions (docs/speakers.md)
    if (speakerGender && st.speakers && result.summary?.[st.speakers.model]) Object.assign(result.summary[st.speakers.model]!, speakerGender);
    channels[String(st.channel)] = result;
    steps[String(st.channel)] = st.steps;
  }
  return { channels, steps };
}
