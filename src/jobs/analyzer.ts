/**
 * The analysis as the job worker sees it. The real implementation calls the pipeline's
 * analyzeFile(); tests about the job lifecycle use a fake.
 */
import { readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AudioInfo, AudioSource } from '../audio/types';

export interface AnalyzeOptions {
  models: string[];
  outputPeriodMs: number;
  channel?: number;
  includeSummary?: boolean;
  includeTransitions?: boolean;
  includeRaw?: boolean;
  volumeThreshold?: number;
  maxDurationSec?: number;
}

export interface AnalyzeHooks {
  onProgress?(p: number): void;
  onInfo?(info: AudioInfo): void;
  signal?: AbortSignal;
}

/** `result.channels` of the results envelope: channel id ("0", "1") -> channel result. */
export type ChannelsResult = Record<string, unknown>;

export interface Analyzer {
  /** Model names a job may ask for. */
  listModels(): string[];
  analyze(source: AudioSource, options: AnalyzeOptions, hooks: AnalyzeHooks): Promise<ChannelsResult>;
  close?(): Promise<void>;
}

/** Model names with a manifest under `modelsDir` (models/<name>/manifest.json). */
export function modelsIn(modelsDir: string): string[] {
  if (!existsSync(modelsDir)) return [];
  return readdirSync(modelsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(modelsDir, d.name, 'manifest.json')))
    .map((d) => d.name)
    .sort();
}

type AnalyzeFile = (source: AudioSource, options: AnalyzeOptions & { modelsDir?: string }, hooks: AnalyzeHooks) => Promise<unknown>;

/** Accepts the channels object, `{channels}` or the whole envelope `{result: {channels}}`. */
export function channelsOf(out: unknown): ChannelsResult {
  const o = out as { result?: { channels?: unknown }; channels?: unknown } | null;
  if (o && typeof o === 'object') {
    if (o.result && typeof o.result === 'object' && o.result.channels && typeof o.result.channels === 'object') {
      return o.result.channels as ChannelsResult;
    }
    if (o.channels && typeof o.channels === 'object') return o.channels as ChannelsResult;
    return o as ChannelsResult;
  }
  throw new Error('analysis returned no channels');
}

/** The analyzer backed by src/pipeline (loaded on first use). */
export function pipelineAnalyzer(modelsDir: string): Analyzer {
  let analyzeFile: AnalyzeFile | null = null;
  const load = (): AnalyzeFile => {
    if (!analyzeFile) {
      // Resolved at run time so this module does not pin the pipeline's load order.
      const mod = require('../pipeline') as { analyzeFile?: AnalyzeFile };
      if (typeof mod.analyzeFile !== 'function') throw new Error('src/pipeline does not export analyzeFile');
      analyzeFile = mod.analyzeFile;
    }
    return analyzeFile;
  };
  return {
    listModels: () => modelsIn(modelsDir),
    analyze: async (source, options, hooks) => channelsOf(await load()(source, { ...options, modelsDir }, hooks)),
    close: async () => {
      if (!analyzeFile) return;
      const inf = require('../inference') as { closeSharedEngines?: () => Promise<void> };
      await inf.closeSharedEngines?.();
    },
  };
}
