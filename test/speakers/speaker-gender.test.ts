/**
 * Each speaker's gender (src/speakers/speaker-gender.ts) on made-up embeddings and a made-up head:
 * the mean of a speaker's windows through the head, two classes summing to exactly 1, a speaker
 * with no window left out, and the head found only when `gender` is requested beside `speakers`.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { SpeakerEmbeddingSums, genderProbabilities, speakerGenderHead, speakerGenderSummary, type SpeakerGenderHead } from '../../src/speakers/speaker-gender';
import type { ModelViews } from '../../src/inference/views';

/** log-odds of male = 4 * (e[0] - e[1]), as a two-class head stores it (class 0's row zero). */
const head: SpeakerGenderHead = { classes: ['female', 'male'], weights: Float32Array.from([0, 0, 0, 4, -4, 0]), bias: Float32Array.from([0, 0]), dim: 3 };

describe('speaker gender', () => {
  it('reads the mean of a speaker\'s windows through the head (the mean of their log-odds)', () => {
    const p = genderProbabilities(head, [0.5, 0.25, 0]);
    assert.ok(Math.abs(p[1]! - 1 / (1 + Math.exp(-1))) < 1e-12, String(p));
    assert.ok(Math.abs(p[0]! + p[1]! - 1) < 1e-12);
  });

  it('gives every speaker with a window both keys, summing to exactly 1, in speaker order', () => {
    const sums = new SpeakerEmbeddingSums();
    sums.add(0, [1, 0, 0]); // male-ish
    sums.add(0, [0.8, 0.6, 0]);
    sums.add(2, [0, 1, 0]); // female-ish; speaker 1 (index 1) has no window
    const out = speakerGenderSummary(head, sums, 3);
    assert.deepEqual(Object.keys(out), ['speaker_1_female_probability', 'speaker_1_male_probability', 'speaker_3_female_probability', 'speaker_3_male_probability']);
    assert.equal(out['speaker_1_male_probability']! + out['speaker_1_female_probability']!, 1);
    // speaker 1's mean is [0.9, 0.3, 0]: log-odds 2.4
    assert.equal(out['speaker_1_male_probability'], Math.round(10000 / (1 + Math.exp(-2.4))) / 10000);
    assert.ok(out['speaker_3_female_probability']! > 0.98);
  });

  it('takes the head of the encoder the speaker map embeds with, and no other', () => {
    const encoder = { name: 'encoder:speaker', dim: 3 } as ModelViews['views'][number]['encoder'];
    const views = { views: [{ encoder, head: { weights: head.weights, bias: head.bias } }], speakerHeads: [] } as unknown as ModelViews;
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:speaker')?.dim, 3);
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:other'), undefined);
    assert.equal(speakerGenderHead(undefined, ['female', 'male'], 'encoder:speaker'), undefined);
  });

  it("takes the head of an int8 copy of the speaker map's encoder (gender 2.2: the same embedding space), and not of another's", () => {
    const int8 = { name: 'encoder:speaker_int8', dim: 3, quantisedFrom: 'encoder:speaker' } as ModelViews['views'][number]['encoder'];
    const views = { views: [{ encoder: int8, head: { weights: head.weights, bias: head.bias } }], speakerHeads: [] } as unknown as ModelViews;
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:speaker')?.weights, head.weights);
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:speaker_int8')?.dim, 3);
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:other'), undefined);
  });

  it("takes gender's speaker head on the map's encoder over a view on another embedding space (gender 2.3)", () => {
    const band = { name: 'encoder:speaker_band', dim: 3 } as ModelViews['views'][number]['encoder'];
    const full = { name: 'encoder:speaker', dim: 3 } as ModelViews['views'][number]['encoder'];
    const other = { weights: Float32Array.from([0, 0, 0, -4, 4, 0]), bias: Float32Array.from([0, 1]) };
    const views = { views: [{ encoder: band, head: other }], speakerHeads: [{ encoder: full, head: { weights: head.weights, bias: head.bias } }] } as unknown as ModelViews;
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:speaker')?.weights, head.weights);
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:speaker_band')?.weights, other.weights);
    assert.equal(speakerGenderHead(views, ['female', 'male'], 'encoder:other'), undefined);
  });
});
