/**
 * A job's request in its two spellings: the wire's JobRequest (snake_case, null for "not
 * given"; the job record's `request`, stored on disk, so old records load unchanged) and the
 * AnalysisRequest the analysis runs. The one place they are converted.
 */
import type { AnalysisRequest } from '../analysis/options';
import type { JobRequest } from './types';

/** The record's request for an analysis request (field order: the record's JSON, and the idempotency fingerprint). */
export function jobRequestOf(analysis: AnalysisRequest, callback: string | null): JobRequest {
  return {
    models: [...analysis.models],
    output_period: analysis.outputPeriodMs,
    channel: analysis.channel ?? null,
    include_summary: analysis.includeSummary,
    include_transitions: analysis.includeTransitions,
    include_raw_values: analysis.includeRaw,
    volume_threshold: analysis.volumeThreshold ?? null,
    callback,
    ...(analysis.numSpeakers !== undefined ? { num_speakers: analysis.numSpeakers } : {}),
    ...(analysis.maxSpeakers !== undefined ? { max_speakers: analysis.maxSpeakers } : {}),
  };
}

/** The analysis a job record asks for (validated when the job was created). */
export function analysisRequestOf(request: JobRequest): AnalysisRequest {
  const analysis: AnalysisRequest = {
    models: request.models,
    outputPeriodMs: request.output_period,
    includeSummary: request.include_summary,
    includeTransitions: request.include_transitions,
    includeRaw: request.include_raw_values,
  };
  if (request.channel !== null) analysis.channel = request.channel;
  if (request.volume_threshold !== null) analysis.volumeThreshold = request.volume_threshold;
  if (request.num_speakers !== undefined) analysis.numSpeakers = request.num_speakers;
  if (request.max_speakers !== undefined) analysis.maxSpeakers = request.max_speakers;
  return analysis;
}
