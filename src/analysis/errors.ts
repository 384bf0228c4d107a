/**
 * Errors raised by the analysis, inference and pipeline layers.
 * Every error carries a stable machine-readable `code` (like the addon's AudioError),
 * so the CLI and the HTTP service can map it to an exit/status code.
 */

export type AurisErrorCode =
  /** A model name that is not in the registry. */
  | 'UNKNOWN_MODEL'
  /** A channel index that the file does not have. */
  | 'INVALID_CHANNEL'
  /** A bad option value (output_period, volume_threshold, ...). */
  | 'INVALID_ARGUMENT'
  /** A model directory, manifest or ONNX file could not be loaded/validated. */
  | 'MODEL_LOAD_FAILED'
  /** The ONNX runtime failed while running a model. */
  | 'INFERENCE_FAILED'
  /** The operation was cancelled through an AbortSignal. */
  | 'ABORTED'
  /** A component was used after close(). */
  | 'CLOSED';

export class AurisError extends Error {
  readonly code: AurisErrorCode;
  /** Extra machine-readable details (e.g. the list of valid models). */
  readonly details?: Record<string, unknown>;

  constructor(code: AurisErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AurisError';
    this.code = code;
    if (details !== undefined) this.details = details;
  }
}

/** True for any error object that carries a string `code` (AurisError, the addon's AudioError, Node system errors). */
export function errorCode(err: unknown): string | undefined {
  if (err && typeof err === 'object' && typeof (err as { code?: unknown }).code === 'string') {
    return (err as { code: string }).code;
  }
  return undefined;
}
