/**
 * The audioanalysis.v1 proto (proto/audioanalysis/v1/audio_analysis.proto), loaded at run
 * time with @grpc/proto-loader, and the TypeScript shapes of its messages as the loader
 * produces them (keepCase, int64 as number, enums as strings, no defaults filled in: an absent
 * field is undefined, which is how "not set" is told apart from 0).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packageRoot } from '../inference/env';
import type { Segment } from '../analysis/postprocess';

export const PROTO_PACKAGE = 'audioanalysis.v1';
export const SERVICE_NAME = `${PROTO_PACKAGE}.AudioAnalysis`;
/** Path of the proto file relative to the proto/ include directory. */
export const PROTO_FILE = 'audioanalysis/v1/audio_analysis.proto';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: false,
  oneofs: true,
};

/** The proto/ include directory of the package (works from src/ and dist/src/). */
export function protoDir(): string {
  const dir = path.join(packageRoot(), 'proto');
  if (!fs.existsSync(path.join(dir, PROTO_FILE))) throw new Error(`proto file not found: ${path.join(dir, PROTO_FILE)}`);
  return dir;
}

let cached: protoLoader.PackageDefinition | undefined;

export function packageDefinition(): protoLoader.PackageDefinition {
  cached ??= protoLoader.loadSync(PROTO_FILE, { ...LOADER_OPTIONS, includeDirs: [protoDir()] });
  return cached;
}

/** The service definition (for server.addService). */
export function serviceDefinition(): grpc.ServiceDefinition {
  return packageDefinition()[SERVICE_NAME] as grpc.ServiceDefinition;
}

/** The generated client constructor of audioanalysis.v1.AudioAnalysis. */
export function clientConstructor(): grpc.ServiceClientConstructor {
  const pkg = grpc.loadPackageDefinition(packageDefinition()) as unknown as {
    audioanalysis: { v1: { AudioAnalysis: grpc.ServiceClientConstructor } };
  };
  return pkg.audioanalysis.v1.AudioAnalysis;
}

// ---------------------------------------------------------------------------------------
// Message shapes (as decoded / encoded by proto-loader with LOADER_OPTIONS)
// ---------------------------------------------------------------------------------------

export type AudioEncodingName = 'AUDIO_ENCODING_UNSPECIFIED' | 'PCM_S16LE' | 'PCM_F32LE' | 'PCM_MULAW' | 'PCM_ALAW';

export interface StreamConfigMsg {
  models?: string[];
  output_period?: number;
  include_raw_values?: boolean;
  volume_threshold?: number;
  sample_rate?: number;
  /** A name, or a number for a value this version does not know. */
  encoding?: AudioEncodingName | number;
  channels?: number;
  channel?: number;
  stream_id?: string;
  include_summary?: boolean;
  include_transitions?: boolean;
  num_speakers?: number;
  max_speakers?: number;
  /** A name, or a number for a value this version does not know. */
  results?: ResultsModeName | number;
}

export type ResultsModeName = 'RESULTS_MODE_UNSPECIFIED' | 'RESULTS_MODE_ALL' | 'RESULTS_MODE_FINAL';

export interface AnalyzeRequestMsg {
  config?: StreamConfigMsg;
  audio?: Buffer;
  message?: 'config' | 'audio';
}

export interface ModelResultMsg {
  result: string;
  confidence: number;
}

export interface StreamSummaryMsg {
  models: Record<string, { fractions: Record<string, number> }>;
  duration_ms: number;
  steps: number;
}


export interface StepResultMsg {
  timestamp: number;
  results?: Record<string, ModelResultMsg>;
  raw?: Record<string, { values: Record<string, number> }>;
  /** Step messages: true for a final result, false (absent when decoded) for a provisional one. */
  final?: boolean;
  summary?: StreamSummaryMsg;
  transitions?: Record<string, { segments: Segment[] }>;
}

export interface ModelInfoMsg {
  name: string;
  version: string;
  labels: string[];
  raw_keys: string[];
  summary_keys: string[];
  receptive_field_ms: number;
  lookahead_ms: number;
  left_context_steps: number;
  right_context_steps: number;
  also_runs: string[];
  stream_lookahead_ms: number;
  placeholder: boolean;
}

export interface ListModelsResponseMsg {
  models: ModelInfoMsg[];
  step_ms: number;
  sample_rate: number;
}
