/**
 * The file front end as the pipeline sees it: src/audio's FileFrontend (decode + resample +
 * features, see src/audio/types.ts), or a test double with the same shape. src/audio loads the
 * native addon only on first use, so importing it here costs nothing until a real file is analysed.
 */
import { FileFrontend } from '../audio';
import type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from '../audio/types';

export interface FileFrontendLike {
  readonly info: AudioInfo;
  /** Next features of the analysed channels, or null at the end of the file. */
  read(): Promise<FeatureChunk[] | null>;
  close(): void | Promise<void>;
}

export type OpenFileFrontend = (source: AudioSource, options: OpenOptions) => FileFrontendLike | Promise<FileFrontendLike>;

/** FileFrontend.open from src/audio. */
export function defaultOpen(): OpenFileFrontend {
  return (source, options) => FileFrontend.open(source, options);
}
