/**
 * The file decoder as the pipeline sees it (src/audio's FileAnalyzer, see src/audio/types.ts).
 * src/audio is loaded at run time so the pipeline (and its tests, which inject a fake) do
 * not need the native addon until a real file is analysed.
 */
import * as path from 'node:path';
import type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from '../audio/types';

export interface FileAnalyzerLike {
  readonly info: AudioInfo;
  /** Next features of the analysed channels, or null at the end of the file. */
  read(): Promise<FeatureChunk[] | null>;
  close(): void | Promise<void>;
}

export type OpenFileAnalyzer = (source: AudioSource, options: OpenOptions) => FileAnalyzerLike | Promise<FileAnalyzerLike>;

let cached: OpenFileAnalyzer | undefined;

/** FileAnalyzer.open from src/audio (loaded on first use). */
export function defaultOpen(): OpenFileAnalyzer {
  if (!cached) {
    const mod = require(path.join(__dirname, '..', 'audio')) as {
      FileAnalyzer?: { open?: OpenFileAnalyzer };
    };
    const FA = mod.FileAnalyzer;
    if (!FA || typeof FA.open !== 'function') throw new Error('src/audio does not export FileAnalyzer.open');
    cached = (source, options) => FA.open!(source, options);
  }
  return cached;
}
