/**
 * The file analysis as the job worker sees it (src/jobs/worker.ts): the models on offer and
 * analyze(request) -> the channels of the results envelope. pipelineAnalyzer() runs
 * analyzeFile() on the shared engine; tests of the job lifecycle inject a fake of this shape.
 */
import type { AnalysisRequest } from '../analysis/options';
import type { ChannelResult } from '../analysis/postprocess';
import type { AudioSource } from '../audio/types';
import { closeSharedEngines } from '../inference/engine';
import { modelsIn } from '../inference/registry';
import { analyzeFile, type AnalyzeHooks } from './analyze-file';

/** `result.channels` of the results envelope: channel id ("0", "1") -> channel result. */
export type ChannelResults = Record<string, ChannelResult>;

/** How the worker runs one analysis: hooks, and the server's limit on the audio's duration. */
export interface AnalyzeRun extends AnalyzeHooks {
  /** Reject files longer than this, combined over the analysed channels. */
  maxDurationSec?: number;
}

export interface Analyzer {
  /** Model names a job may ask for. */
  listModels(): string[];
  analyze(source: AudioSource, request: AnalysisRequest, run: AnalyzeRun): Promise<ChannelResults>;
  close?(): Promise<void>;
}

/** The analyzer backed by analyzeFile() and the shared engine of `modelsDir` (started on first use). */
export function pipelineAnalyzer(modelsDir: string): Analyzer {
  let used = false;
  return {
    listModels: () => modelsIn(modelsDir),
    analyze: async (source, request, run) => {
      used = true;
      return (await analyzeFile(source, request, { ...run, modelsDir })).channels;
    },
    close: async () => {
      if (used) await closeSharedEngines();
    },
  };
}
