/**
 * The file analysis as the job worker sees it (src/jobs/worker.ts): the models on offer and
 * analyze(request) -> the channels of the results envelope. pipelineAnalyzer() runs
 * analyzeFile() on the shared engine; tests of the job lifecycle inject a fake of this shape.
 */
import type { AnalysisRequest } from '../analysis/options';
import type { ChannelResult } from '../analysis/postprocess';
import type { AudioSource } from '../audio/types';
import { trimNativeMemory } from '../audio';
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

/**
 * The analyzer backed by analyzeFile() and the shared engine of `modelsDir` (started on first use).
 * When its last running analysis ends, it gives glibc's freed memory back (`releaseWhenIdle`, malloc_trim
 * on a pool thread, ~9 ms): without it a server's RSS crept after every job (5-minute files with every
 * model: 278, 297, 315 MiB after three jobs; given back, 248-261 after each; docs/deploy.md, Memory).
 * Only when idle: the trim locks allocation while it runs, and a busy server reuses what was freed.
 */
export function pipelineAnalyzer(modelsDir: string, releaseWhenIdle: () => Promise<unknown> = trimNativeMemory): Analyzer {
  let used = false;
  let running = 0;
  return {
    listModels: () => modelsIn(modelsDir),
    analyze: async (source, request, run) => {
      used = true;
      running++;
      try {
        return (await analyzeFile(source, request, { ...run, modelsDir })).channels;
      } finally {
        if (--running === 0) void releaseWhenIdle().catch(() => undefined);
      }
    },
    close: async () => {
      if (used) await closeSharedEngines();
    },
  };
}
