/**
 * The order rules of a stream's step messages (docs/streaming.md "Provisional results"), for
 * both transports: finals in timestamp order, one per step; every provisional message of a step
 * before its final; per model, provisional results in timestamp order and at most one per step
 * (models of different tiers answer at different times, so the messages interleave); a later
 * provisional message of a step holds every model an earlier one held, with the same result.
 */
import { strict as assert } from 'node:assert';

export interface StepMessage {
  timestamp: number;
  final: boolean;
  results: Record<string, { result: string; confidence: number }>;
}

export function checkStepOrder(messages: readonly StepMessage[]): void {
  let lastFinal = -1;
  const lastProv = new Map<string, number>();
  const provOf = new Map<number, StepMessage>();
  for (const m of messages) {
    const t = m.timestamp;
    if (m.final) {
      assert.ok(t > lastFinal, `final of ${t} after the final of ${lastFinal}`);
      lastFinal = t;
      continue;
    }
    assert.ok(t > lastFinal, `provisional of ${t} after the final of ${lastFinal}`);
    const before = provOf.get(t);
    for (const [model, r] of Object.entries(before?.results ?? {})) {
      assert.ok(m.results[model], `provisional of ${t} lost model ${model} held by an earlier one`);
      assert.deepEqual(m.results[model], r, `provisional of ${t} changed ${model} without a final`);
    }
    for (const model of Object.keys(m.results)) {
      if (before?.results[model]) continue;
      const last = lastProv.get(model) ?? -1;
      assert.ok(t > last, `provisional ${model} of ${t} after its provisional of ${last}`);
      lastProv.set(model, t);
    }
    provOf.set(t, m);
  }
}
