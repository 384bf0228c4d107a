/**
 * InferenceEngine.encoding: a long file job gives the pretrained encoders' sessions back once its audio is embedded,
 * and only when no other file job is still embedding (the release itself: pool.test.ts).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { InferenceEngine } from '../../src/inference';
import type { PoolModel } from '../../src/inference/pool';

describe('inference engine: encoders released after the last embedding file job', () => {
  let engine: InferenceEngine;
  const released: string[][] = [];
  before(async () => {
    engine = await InferenceEngine.create({ size: 1, verify: false });
    const release = engine.pool.releaseSessions.bind(engine.pool);
    engine.pool.releaseSessions = (models: readonly PoolModel[]) => {
      released.push(models.map((m) => m.name));
      return release(models);
    };
  });
  after(() => engine.close());

  it('releases once the last job that embeds finishes asking for it, and only then', async () => {
    const speakers = engine.model('speakers');
    const gender = engine.model('gender');
    const speech = engine.model('speech');
    assert.equal(await engine.encoding([speech])(true), false, 'no encoder in the job: nothing to release');
    const a = engine.encoding([speakers]);
    const b = engine.encoding([speech, gender]);
    assert.equal(await a(true), false, 'the other job still embeds');
    assert.equal(released.length, 0, 'nothing released yet');
    assert.equal(await b(true), true, 'the last one releases');
    assert.equal(await a(true), false, 'a job finishes once');
    assert.equal(released.length, 1);
    assert.ok(released[0]!.length >= 1 && released[0]!.every((n) => n.length > 0), `the encoders: ${released[0]!.join(', ')}`);
    assert.equal(new Set(released[0]).size, released[0]!.length, 'each encoder once');
    const short = engine.encoding([speakers]);
    assert.equal(await short(false), false, 'a job that does not ask keeps them');
    assert.equal(released.length, 1);
  });
});
