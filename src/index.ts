/**
 * auris: self-hostable audio analysis (speech/music/other, arousal, voice gender per time step).
 *
 *   analyzeFile(source, options, hooks)  -> per-channel results (src/pipeline)
 *   buildEnvelope(jobId, channels)       -> SPEC results envelope (src/analysis)
 *   InferenceEngine / sharedEngine       -> model registry + worker pool (src/inference)
 */
export * from './analysis';
export * from './inference';
export * from './pipeline';
export type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from './audio/types';
/** The native audio front end (probe, FileAnalyzer, StreamFrontend, AudioError). */
export * as audio from './audio';
