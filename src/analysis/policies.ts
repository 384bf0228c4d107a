/**
 * How each model's per-step probabilities become labels and summary fractions.
 * The built-in models follow SPEC.md's label table (emotions, added by us, follows arousal's rules); any other model name
 * (added later by a manifest) gets a generic policy: labels = its raw keys + silence.
 * Every decision here is documented in docs/results.md.
 */

/**
 * Probability the winning gender class must reach; below it the step is `unknown`. 0.55 since
 * gender 2.0: on leave-one-corpus-out clips its fused probabilities are right on 0.931 of them at
 * 0.55 against 0.906 at 0.65 (unknown counted as wrong; models/gender/MODEL_CARD.md).
 */
export const GENDER_UNKNOWN_THRESHOLD = 0.55;

/** The model whose `speech` label gates the speech-dependent models. */
export const SPEECH_MODEL = 'speech';
/** The speech model's raw key / label meaning "speech". */
export const SPEECH_LABEL = 'speech';
export const SILENCE_LABEL = 'silence';
export const NO_SPEECH_LABEL = 'no_speech';
export const UNKNOWN_LABEL = 'unknown';

/** Expected raw keys (as a set) of the built-in models; the registry checks manifests against these. */
export const BUILTIN_RAW_KEYS: Readonly<Record<string, readonly string[]>> = {
  speech: ['music', 'other', 'speech'],
  arousal: ['high', 'low', 'neutral'],
  gender: ['female', 'male'],
  emotions: ['happy', 'irritated', 'neutral', 'tired'],
};

export interface ModelPolicy {
  readonly name: string;
  /** Class order of the model output (manifest.raw_keys). */
  readonly rawKeys: readonly string[];
  /** Steps where the speech model's label is not `speech` become `no_speech`. */
  readonly speechGated: boolean;
  /** Winning probability below this -> `unknown` (undefined: never). */
  readonly unknownThreshold?: number;
  /** Decide from the running mean since the speech segment began (segment.ts), not the step alone. */
  readonly segmentSmoothing?: boolean;
  /** Summary classes in output order; each becomes `<class>_fraction`. */
  readonly summaryClasses: readonly string[];
  /** Summary class that a step label counts towards. */
  summaryClassOf(label: string): string;
}

const identity = (label: string): string => label;

export interface PolicyOverrides {
  genderUnknownThreshold?: number;
  segmentSmoothing?: boolean;
}

/**
 * The policy for a model. `rawKeys` is the model's manifest raw_keys (output order).
 * `overrides.genderUnknownThreshold` replaces GENDER_UNKNOWN_THRESHOLD; `overrides.segmentSmoothing: false`
 * decides gender step by step (the hand-worked post-processing tests use it).
 */
export function policyFor(
  name: string,
  rawKeys: readonly string[],
  overrides: PolicyOverrides = {},
): ModelPolicy {
  switch (name) {
    case 'speech':
      return {
        name,
        rawKeys,
        speechGated: false,
        summaryClasses: ['music', 'other', 'speech', SILENCE_LABEL],
        summaryClassOf: identity,
      };
    case 'arousal':
      return {
        name,
        rawKeys,
        speechGated: true,
        summaryClasses: ['high', 'low', 'neutral', NO_SPEECH_LABEL, SILENCE_LABEL],
        summaryClassOf: identity,
      };
    case 'emotions':
      // Same rules as arousal: a speaker model, gated by the speech model (docs/results.md).
      return {
        name,
        rawKeys,
        speechGated: true,
        summaryClasses: ['happy', 'irritated', 'neutral', 'tired', NO_SPEECH_LABEL, SILENCE_LABEL],
        summaryClassOf: identity,
      };
    case 'gender':
      return {
        name,
        rawKeys,
        speechGated: true,
        unknownThreshold: overrides.genderUnknownThreshold ?? GENDER_UNKNOWN_THRESHOLD,
        // A speaker's voice does not change gender inside one continuous stretch of speech.
        segmentSmoothing: overrides.segmentSmoothing ?? true,
        // SPEC lists no no_speech_fraction for gender: no-speech time counts as `other`.
        summaryClasses: ['male', 'female', 'other', UNKNOWN_LABEL, SILENCE_LABEL],
        summaryClassOf: (label) => (label === NO_SPEECH_LABEL ? 'other' : label),
      };
    case 'speakers':
      // raw keys speaker_1..speaker_n; a file's channel lists only the speakers found (src/speakers)
      return {
        name,
        rawKeys,
        speechGated: true,
        summaryClasses: [...rawKeys, NO_SPEECH_LABEL, SILENCE_LABEL],
        summaryClassOf: identity,
      };
    default:
      return {
        name,
        rawKeys,
        speechGated: false,
        summaryClasses: [...rawKeys, SILENCE_LABEL],
        summaryClassOf: identity,
      };
  }
}

/** The speaker models: their steps are `no_speech` where the speech model hears no speech. */
const SPEECH_GATED_MODELS: readonly string[] = ['arousal', 'gender', 'emotions', 'speakers'];

/** True when running `name` also requires the speech model (for no_speech gating). */
export function needsSpeechModel(name: string): boolean {
  return SPEECH_GATED_MODELS.includes(name);
}

/**
 * The models that must actually run for a request: the requested ones plus `speech`
 * when a speech-gated model is requested (speech then runs but is only reported if asked for).
 */
export function modelsToRun(requested: readonly string[]): string[] {
  const out = [...requested];
  if (requested.some(needsSpeechModel) && !out.includes(SPEECH_MODEL)) out.push(SPEECH_MODEL);
  return out;
}
