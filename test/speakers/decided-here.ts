import { strict as assert } from 'node:assert';
import type { Decision } from '../../src/speakers/clustering';

/** A stream's decision made on the calling thread (no clustering thread given: never a promise). */
export function decidedHere(d: Decision | Promise<Decision>): Decision {
  assert.ok(!(d instanceof Promise), 'clustered on the calling thread');
  return d as Decision;
}
