/** File analysis orchestration. */
export { analyzeFile, expectedSteps } from './analyze-file';
export type { AnalyzeFileSettings, AnalyzeHooks, FileAnalysis } from './analyze-file';
export { pipelineAnalyzer } from './analyzer';
export type { Analyzer, AnalyzeRun, ChannelResults } from './analyzer';
export type { FileFrontendLike, OpenFileFrontend } from './audio';
