/**
 * What a test needs from the machine, in one place. A test that cannot run here (no nats-server,
 * no chromium, no grpcio, no tmpfs, no models or native addon) is skipped with the reason, unless
 * AURIS_TEST_STRICT=1 (set by .ci/run): then it fails with the same reason, so a green CI run
 * means every test really ran. scripts/setup.sh installs everything the strict run needs.
 */
import { join, resolve } from 'node:path';
import type { TestContext } from 'node:test';
import { modelsIn } from '../src/jobs/analyzer';

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

/** Why the shipped speech, arousal and gender models cannot be used here, or false. */
export function modelsMissing(dir = MODELS_DIR): string | false {
  const have = modelsIn(dir);
  const missing = ['speech', 'arousal', 'gender'].filter((m) => !have.includes(m));
  return missing.length === 0 ? false : `${dir} has no ${missing.join(', ')} model (they are committed to git: check the clone)`;
}

/** True when the shipped models are there; in strict mode their absence throws (the file fails). */
export function haveShippedModels(): boolean {
  return envSkip(modelsMissing()) === false;
}
