/**
 * auris: self-hostable audio analysis (speech/music/other, arousal, voice gender per time step).
 *
 *   analyzeFile(source, request, settings)  -> per-channel results (src/pipeline; request: an AnalysisRequest)
 *   buildEnvelope(jobId, channels)          -> SPEC results envelope (src/analysis)
 *   InferenceEngine / sharedEngine          -> model registry + worker pool (src/inference)
 *   openStream(target, options)             -> live analysis over WebSocket or gRPC (src/client)
 *   startApp(options)                       -> the whole service in this process (src/app.ts)
 */
/** The one error catalogue: every stable error code, its message and its HTTP, gRPC, WebSocket and job behaviour. */
export { AurisError, errorCode, ERRORS } from './errors';
export type { ErrorCode, ErrorSpec } from './errors';
export * from './analysis';
export * from './inference';
export * from './pipeline';
export type { AudioInfo, AudioSource, FeatureChunk, OpenOptions } from './audio/types';
/** The native audio front end (probe, FileFrontend, StreamFrontend, AudioError). */
export * as audio from './audio';
/** For file hosts: verify the service's signed download requests (docs/download.md). */
export { verifyDownloadRequest, DownloadVerificationError, KeyConfigError, MemoryJtiStore } from './download/verify';
export type { JtiStore, VerifyDownloadOptions, VerifiedDownloadRequest } from './download/verify';
export type { DownloadClaims } from './download/sign';
/** For callback receivers: verify the Standard Webhooks signature of a job-finished callback (docs/api.md). */
export { verifyCallback, CallbackVerificationError, MemoryWebhookIdStore } from './callbacks/verify';
export type { VerifyCallbackOptions, WebhookIdStore, CallbackVerificationErrorCode } from './callbacks/verify';
/** A typed client of the REST API (create, wait with progress, results, delete, list; errors carry `code`). */
export { AurisClient, AurisApiError, AurisTimeoutError, contentTypeOf } from './client';
export type { ClientOptions, JobRecord, JobStatus, JobMetadata, JobParams, JobInput, CreateOptions, ListOptions, JobPage, WaitOptions, ResultsEnvelope, Problem } from './client';
/** Live analysis client for both transports (docs/streaming.md). */
export { openStream, pipeAudio, streamQuery, grpcConfig, StreamClientError } from './client/stream';
export type { AudioStream, StreamClientOptions, StreamMessage, StreamTarget } from './client/stream';
export { streamFile } from './client/file';
export type { FileStreamOptions } from './client/file';
export { startApp } from './app';
export type { AppOptions, AurisApp, StreamingOptions } from './app';
