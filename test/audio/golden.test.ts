/**
 * The native front end against the Python reference (training/features/logmel.py):
 * test/fixtures/features_golden.json = {"sample_rate":16000, "samples":[...], "steps":N,
 * "levels":[...], "features":[[64 floats] per frame]}, produced by
 * `python -m training.features --golden test/fixtures/features_golden.json`.
 * Features must agree within 1e-3 (natural-log domain), levels within 1e-3 dB.
 * A missing fixture is a failure, not a skip.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { computeFeatures, StreamFrontend } from '../../src/audio';
import { concatChannel } from './helpers';

interface Golden {
  sample_rate: number;
  samples: number[];
  steps: number;
  levels: number[];
  features: number[][];
}

const FIXTURE = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'features_golden.json');

function load(): Golden {
  assert.ok(fs.existsSync(FIXTURE), `${FIXTURE} is missing (python -m training.features --golden ${FIXTURE})`);
  const g = JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as Golden;
  assert.equal(g.sample_rate, 16000, 'golden signal must be at 16 kHz');
  assert.ok(Array.isArray(g.samples) && g.samples.length > 0, 'golden samples');
  assert.equal(g.levels.length, g.steps);
  assert.equal(g.features.length, g.steps * 4);
  for (const row of g.features) assert.equal(row.length, 64);
  return g;
}

function compare(g: Golden, levels: Float32Array, features: Float32Array, steps: number): void {
  assert.equal(steps, g.steps);
  let worstLevel = 0, worstFeature = 0, at = '';
  for (let s = 0; s < steps; s++) worstLevel = Math.max(worstLevel, Math.abs(levels[s]! - g.levels[s]!));
  for (let f = 0; f < g.features.length; f++) {
    for (let m = 0; m < 64; m++) {
      const d = Math.abs(features[f * 64 + m]! - g.features[f]![m]!);
      if (d > worstFeature) {
        worstFeature = d;
        at = `frame ${f}, mel ${m}: ${features[f * 64 + m]} vs ${g.features[f]![m]}`;
      }
    }
  }
  assert.ok(worstLevel <= 1e-3, `levels differ by up to ${worstLevel} dB`);
  assert.ok(worstFeature <= 1e-3, `features differ by up to ${worstFeature} (${at})`);
}

describe('golden features (Python reference implementation)', () => {
  it('computeFeatures() matches features_golden.json', () => {
    const g = load();
    const out = computeFeatures(Float32Array.from(g.samples));
    compare(g, out.levels, out.features, out.steps);
  });

  it('StreamFrontend (f32le, uneven pushes) matches features_golden.json', () => {
    const g = load();
    const x = Float32Array.from(g.samples);
    const bytes = new Uint8Array(x.buffer);
    const s = new StreamFrontend({ sampleRate: 16000, channels: 1, encoding: 'f32le' });
    const chunks = [];
    for (let at = 0, k = 1; at < bytes.length; k = (k * 7 + 3) % 1999) {
      chunks.push(...s.push(bytes.subarray(at, at + k)));
      at += k;
    }
    chunks.push(...s.end());
    const out = concatChannel(chunks, 0);
    compare(g, out.levels, out.features, out.steps);
  });
});
