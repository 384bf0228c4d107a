/**
 * What a test needs from the machine, in one place. A test that cannot run here (no nats-server,
 * no chromium, no grpcio, no tmpfs, no models or native addon) is skipped with the reason, unless
 * AURIS_TEST_STRICT=1 (set by .ci/run): then it fails with the same reason, so a green CI run
 * means every test really ran. scripts/setup.sh installs everything the strict run needs.
 */
import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { type PlaceholderSpec, writePlaceholderModels } from '../src/inference/placeholder';
import { modelsIn } from '../src/inference/registry';

export const STRICT = process.env['AURIS_TEST_STRICT'] === '1';

/** The repository root (tests run from dist/test/...). */
export const ROOT = resolve(__dirname, '..', '..');
/** The shipped models (committed to git). */
export const MODELS_DIR = join(ROOT, 'models');

export class MissingEnvironment extends Error {
  constructor(reason: string) {
    super(`AURIS_TEST_STRICT=1 and this test cannot run here: ${reason}`);
  }
}

/**
 * For a describe()/it() `skip` option: `reason` when the environment lacks something (false when
 * it has everything). In strict mode a reason throws instead, which fails the test file.
 */
export function envSkip(reason: string | false): string | false {
  if (reason && STRICT) throw new MissingEnvironment(reason);
  return reason;
}

/** Inside a test: skips it with `reason`, or (strict) fails it. Return right after calling. */
export function skipOrFail(t: TestContext, reason: string): void {
  if (STRICT) throw new MissingEnvironment(reason);
  t.skip(reason);
}

/** Why the shipped speech, arousal, gender and emotions models cannot be used here, or false. */
export function modelsMissing(dir = MODELS_DIR): string | false {
  const have = modelsIn(dir);
  const missing = ['speech', 'arousal', 'gender', 'emotions'].filter((m) => !have.includes(m));
  return missing.length === 0 ? false : `${dir} has no ${missing.join(', ')} model (they are committed to git: check the clone)`;
}

/** True when the shipped models are there; in strict mode their absence throws (the file fails). */
export function haveShippedModels(): boolean {
  return envSkip(modelsMissing()) === false;
}

/**
 * A models directory with placeholder `speech` and extra models, and `broken`: a model that
 * passes the load check (one step) and returns too few values on every real call, so a job or
 * stream using it fails with INFERENCE_FAILED (test/fixtures/broken-model/make.py).
 */
export function modelsDirWithBroken(dir: string, extra: PlaceholderSpec[] = []): string {
  writePlaceholderModels(dir, [{ name: 'speech' }, { name: 'broken', rawKeys: ['a', 'b'], pads: [[1, 1], [1, 1]] }, ...extra]);
  copyFileSync(join(ROOT, 'test', 'fixtures', 'broken-model', 'broken.onnx'), join(dir, 'broken', 'model.onnx'));
  return dir;
}

/**
 * For a child started with a fresh environment: the variables that carry the loopback guard
 * (loopback-only.ts) and its log, so the child is guarded too.
 */
export function guardEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of ['NODE_OPTIONS', 'AURIS_NET_GUARD_LOG']) if (process.env[k]) out[k] = process.env[k]!;
  return out;
}
