/**
 * Silero VAD reference for the benchmark. The implementation lives in src/eval/silero.ts
 * (the eval command needs it too, and src/ must not import from bench/); see there for the
 * model's inputs, state and context handling.
 */
export * from '../src/eval/silero';
