/**
 * A job's request in its two spellings (src/jobs/request.ts): the record's JobRequest (wire,
 * on disk) and the AnalysisRequest the worker hands to the analyzer. Old records must load
 * unchanged and a request must survive the round trip byte for byte (the job record's JSON and
 * the Idempotency-Key fingerprint are computed from it).
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { parseAnalysisRequest } from '../../src/analysis/options';
import { requestFingerprint } from '../../src/jobs/idempotency';
import { analysisRequestOf, jobRequestOf } from '../../src/jobs/request';
import type { JobRequest } from '../../src/jobs/types';

/** The `request` of a record as an earlier version stored it (nothing given but models and output_period). */
const STORED_MINIMAL = '{"models":["speech","gender"],"output_period":1024,"channel":null,"include_summary":false,"include_transitions":false,"include_raw_values":false,"volume_threshold":null,"callback":null}';
const STORED_FULL =
  '{"models":["arousal"],"output_period":512,"channel":1,"include_summary":true,"include_transitions":true,"include_raw_values":true,"volume_threshold":-42.5,"callback":"https://example.com/hook"}';

describe('job request <-> analysis request', () => {
  it('a stored request with nothing optional: every channel, the default gate', () => {
    const analysis = analysisRequestOf(JSON.parse(STORED_MINIMAL) as JobRequest);
    assert.deepEqual(analysis, { models: ['speech', 'gender'], outputPeriodMs: 1024, includeSummary: false, includeTransitions: false, includeRaw: false });
    assert.equal('channel' in analysis, false);
    assert.equal('volumeThreshold' in analysis, false);
    // What the analysis runs with: the default gate of -60 dBFS.
    assert.equal(parseAnalysisRequest(analysis).volumeThreshold, -60);
  });

  it('a stored request with every parameter', () => {
    assert.deepEqual(analysisRequestOf(JSON.parse(STORED_FULL) as JobRequest), {
      models: ['arousal'],
      outputPeriodMs: 512,
      channel: 1,
      includeSummary: true,
      includeTransitions: true,
      includeRaw: true,
      volumeThreshold: -42.5,
    });
  });

  it('the round trip gives the stored JSON byte for byte, so fingerprints stay stable', () => {
    for (const stored of [STORED_MINIMAL, STORED_FULL]) {
      const record = JSON.parse(stored) as JobRequest;
      const again = jobRequestOf(analysisRequestOf(record), record.callback);
      assert.equal(JSON.stringify(again), stored);
      const parts = { metadata: null, method: 'url', contentType: null, body: 'https://example.com/a.wav' };
      assert.equal(requestFingerprint({ ...parts, request: again }), requestFingerprint({ ...parts, request: record }));
    }
  });

  it('channel 0 and a gate of 0 dBFS are kept (not taken for "not given")', () => {
    const record = jobRequestOf({ models: ['speech'], outputPeriodMs: 64, channel: 0, includeSummary: false, includeTransitions: false, includeRaw: false, volumeThreshold: 0 }, null);
    assert.equal(record.channel, 0);
    assert.equal(record.volume_threshold, 0);
    const analysis = analysisRequestOf(record);
    assert.equal(analysis.channel, 0);
    assert.equal(analysis.volumeThreshold, 0);
  });
});
