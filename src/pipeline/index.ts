/** File analysis orchestration. */
export { analyzeFile, expectedSteps } from './analyze-file';
export type { AnalyzeFileOptions, AnalyzeHooks, FileAnalysis } from './analyze-file';
export type { FileAnalyzerLike, OpenFileAnalyzer } from './audio';
