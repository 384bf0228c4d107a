import { strict as assert } from 'node:assert';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultModelsDir, ModelRegistry, packageRoot, writePlaceholderModels } from '../../src/inference';
import { dot, normalise } from '../../src/speakers/clustering';
import { whiten } from '../../src/speakers/whitening';
import { PAIR_FEATURES } from '../../src/speakers/alike-merge';

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'auris-registry-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh models dir with the three placeholder models. */
function modelsDir(name: string): string {
  return writePlaceholderModels(path.join(tmp, name));
}

function expectLoadError(fn: () => unknown, file: string, re: RegExp): void {
  assert.throws(fn, (e: Error & { code?: string }) => {
    assert.equal(e.code, 'MODEL_LOAD_FAILED', e.message);
    assert.ok(e.message.includes(file), `message names ${file}: ${e.message}`);
    assert.match(e.message, re);
    return true;
  });
}

describe('model registry', () => {
  it('loads every manifest and exposes name, version, raw keys, context, receptive field, placeholder flag', async () => {
    const dir = modelsDir('ok');
    fs.mkdirSync(path.join(dir, 'not-a-model')); // no manifest: ignored
    const reg = await ModelRegistry.load({ modelsDir: dir });
    assert.deepEqual(reg.names(), ['arousal', 'gender', 'speech']);
    const sp = reg.get('speech');
    assert.equal(sp.name, 'speech');
    assert.equal(sp.version, '0.0.0-placeholder');
    assert.equal(sp.placeholder, true);
    assert.deepEqual(sp.rawKeys, ['music', 'other', 'speech']);
    assert.deepEqual(sp.context, { leftSteps: 5, rightSteps: 3 });
    assert.equal(sp.receptiveFieldMs, 9 * 64);
    assert.equal(sp.modelPath, path.join(dir, 'speech', 'model.onnx'));
    assert.deepEqual(reg.get('gender').rawKeys, ['female', 'male']);
    assert.deepEqual(reg.rawKeys()['arousal'], ['high', 'low', 'neutral']);
  });

  it('unknown model names give UNKNOWN_MODEL listing the valid ones', () => {
    const reg = ModelRegistry.loadSync({ modelsDir: modelsDir('unknown') });
    assert.throws(() => reg.get('age'), { code: 'UNKNOWN_MODEL', message: 'unknown model: age; valid models: arousal, gender, speech' });
    assert.throws(() => reg.resolve(['speech', 'age', 'mood']), { code: 'UNKNOWN_MODEL', message: /unknown models: age, mood/ });
  });

  it('a corrupt manifest fails loading, naming the file', () => {
    const dir = modelsDir('badjson');
    const file = path.join(dir, 'gender', 'manifest.json');
    fs.writeFileSync(file, '{"name": "gender",');
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: dir }), file, /invalid JSON/);
  });

  it('a missing model file fails loading, naming the file', () => {
    const dir = modelsDir('missing');
    const file = path.join(dir, 'arousal', 'model.onnx');
    fs.rmSync(file);
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: dir }), file, /model file missing/);
  });

  it('a corrupt ONNX file fails verified loading, naming the file', async () => {
    const dir = modelsDir('badonnx');
    const file = path.join(dir, 'speech', 'model.onnx');
    fs.writeFileSync(file, 'this is not a protobuf');
    ModelRegistry.loadSync({ modelsDir: dir }); // the manifest itself is fine
    await assert.rejects(ModelRegistry.load({ modelsDir: dir }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'MODEL_LOAD_FAILED');
      assert.ok(e.message.startsWith(file), e.message);
      return true;
    });
  });

  it('validates manifest fields against the contract', () => {
    const cases: [string, (m: Record<string, unknown>) => void, RegExp][] = [
      ['rawkeys', (m) => (m['raw_keys'] = ['music', 'speech']), /raw_keys/],
      ['name', (m) => (m['name'] = 'other'), /directory/],
      ['context', (m) => (m['context'] = { left_steps: -1, right_steps: 2 }), /context/],
      ['features', (m) => ((m['features'] as Record<string, unknown>)['n_mels'] = 40), /n_mels/],
      ['version', (m) => delete m['version'], /version/],
    ];
    for (const [name, edit, re] of cases) {
      const dir = modelsDir(`field-${name}`);
      const file = path.join(dir, 'speech', 'manifest.json');
      const m = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
      edit(m);
      fs.writeFileSync(file, JSON.stringify(m));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: dir }), file, re);
    }
  });

  /** A models dir with a copy of the shipped gender model (model.onnx, stream.onnx, its encoder view). */
  const copy = (name: string): string => {
    const dir = path.join(tmp, name);
    fs.cpSync(path.join(packageRoot(), 'models', 'gender'), path.join(dir, 'gender'), { recursive: true });
    fs.cpSync(path.join(packageRoot(), 'models', 'encoders'), path.join(dir, 'encoders'), { recursive: true });
    return dir;
  };

  it('reads the encoder view\'s speech gate (gender 2.1.1; absent: none), and rejects a bad one naming the file', () => {
    const gateOf = (name: string, f: (schedule: Record<string, unknown>) => void): string => {
      const dir = copy(name);
      const file = path.join(dir, 'gender', 'manifest.json');
      const m = JSON.parse(fs.readFileSync(file, 'utf8')) as { views: { schedule: Record<string, unknown> } };
      f(m.views.schedule);
      fs.writeFileSync(file, JSON.stringify(m));
      return dir;
    };
    const shipped = ModelRegistry.loadSync({ modelsDir: copy('gate-ok') }).get('gender').views!.schedule;
    assert.deepEqual(shipped.speechGate, { steps: 13, minSpeechSteps: 4 });
    const none = ModelRegistry.loadSync({ modelsDir: gateOf('gate-none', (s) => delete s['speech_gate']) }).get('gender').views!.schedule;
    assert.equal(none.speechGate, undefined, 'a manifest before 2.1.1: the level gate alone');
    const both = ModelRegistry.loadSync({ modelsDir: gateOf('gate-both', (s) => (s['speech_gate'] = { steps: 13, min_speech_steps: 0, max_non_speech_steps: 6 })) }).get('gender').views!.schedule;
    assert.deepEqual(both.speechGate, { steps: 13, minSpeechSteps: 0, maxNonSpeechSteps: 6 });
    const bad = [{ steps: 26, min_speech_steps: 4 }, { steps: 13, min_speech_steps: 14 }, { steps: 13 }, { steps: 0, min_speech_steps: 0 }, [13, 4],
      { steps: 13, min_speech_steps: 4, max_non_speech_steps: 14 }, { steps: 13, min_speech_steps: 4, max_non_speech_steps: -1 }, { steps: 13, min_speech_steps: 4, max_non_speech_steps: '6' }];
    for (const [i, g] of bad.entries()) {
      const dir = gateOf(`gate-bad-${i}`, (s) => (s['speech_gate'] = g));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: dir }), path.join(dir, 'gender', 'manifest.json'), /speech_gate" must be \{steps: 1\.\.25, min_speech_steps: 0\.\.steps, max_non_speech_steps\?: 0\.\.steps\}/);
    }
  });

  it('reads a model\'s encoder view, and rejects a missing encoder or a malformed head naming the file', () => {
    const ok = copy('views-ok');
    const v = ModelRegistry.loadSync({ modelsDir: ok }).get('gender').views;
    assert.ok(v, 'gender has an encoder view');
    const speaker = v.views[0]!;
    // the encoder gender's manifest names first (campplus since gender 2.1)
    const named = ((JSON.parse(fs.readFileSync(path.join(ok, 'gender', 'manifest.json'), 'utf8')) as { views: { encoders: { encoder: string }[] } }).views.encoders[0]!).encoder;
    assert.equal(speaker.encoder.name, `encoder:${named}`);
    assert.equal(speaker.encoder.modelPath, path.join(ok, 'encoders', named, 'encoder.onnx'));
    assert.equal(speaker.encoder.pcmFloats, 25600);
    assert.equal(speaker.head.weights.length, v.classes * speaker.encoder.dim, 'one row per class (class 0 zero for two classes)');
    assert.ok(speaker.head.weights.subarray(0, speaker.encoder.dim).every((w) => w === 0));
    assert.equal(v.fusion.views.length, v.views.length);
    assert.equal(v.schedule.windowSteps, 25);
    assert.equal(ModelRegistry.loadSync({ modelsDir: ok }).names().includes('encoders'), false, 'an encoder is not a model');

    const noEncoder = copy('views-no-encoder');
    fs.rmSync(path.join(noEncoder, 'encoders'), { recursive: true });
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: noEncoder }), path.join(noEncoder, 'encoders', named, 'manifest.json'), /cannot read the encoder manifest/);
    const badBatch = copy('views-bad-max-batch');
    const encoderManifest = path.join(badBatch, 'encoders', named, 'manifest.json');
    fs.writeFileSync(encoderManifest, JSON.stringify({ ...(JSON.parse(fs.readFileSync(encoderManifest, 'utf8')) as object), max_batch: 0 }));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: badBatch }), encoderManifest, /max_batch/);
    for (const [i, from] of [named, 'Camp Plus', 7].entries()) {
      const badFrom = copy(`views-bad-quantised-from-${i}`);
      const m = path.join(badFrom, 'encoders', named, 'manifest.json');
      fs.writeFileSync(m, JSON.stringify({ ...(JSON.parse(fs.readFileSync(m, 'utf8')) as object), quantised_from: from }));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: badFrom }), m, /"quantised_from" must name another encoder/);
    }

    const manifest = (dir: string): string => path.join(dir, 'gender', 'manifest.json');
    const edit = (name: string, f: (views: Record<string, unknown>) => void): string => {
      const dir = copy(name);
      const m = JSON.parse(fs.readFileSync(manifest(dir), 'utf8')) as Record<string, Record<string, unknown>>;
      f(m['views']!);
      fs.writeFileSync(manifest(dir), JSON.stringify(m));
      return dir;
    };
    const first = (v: Record<string, unknown>): Record<string, unknown> => (v['encoders'] as Record<string, unknown>[])[0]!;
    const short = edit('views-short-head', (v) => ((first(v)['head'] as Record<string, unknown>)['weights'] = [1, 2, 3]));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: short }), manifest(short), /views.encoders\[0\].head/);
    const weights = edit('views-fusion', (v) => ((v['fusion'] as Record<string, unknown>)['views'] = []));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: weights }), manifest(weights), /views.fusion/);
    const escape = edit('views-escape', (v) => (first(v)['encoder'] = '../gender'));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: escape }), manifest(escape), /plain name/);
    const window = edit('views-window', (v) => ((v['schedule'] as Record<string, unknown>)['window_steps'] = 20));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: window }), manifest(window), /window_steps/);
    const speakerHead = (name: string, entry: unknown): string => edit(name, (v) => (v['speaker_heads'] = entry));
    const badSpeakerHead = speakerHead('views-speaker-head-short', [{ encoder: 'campplus', head: { weights: [1, 2, 3], bias: 0 } }]);
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: badSpeakerHead }), manifest(badSpeakerHead), /views.speaker_heads\[0\].head/);
    const notList = speakerHead('views-speaker-head-object', { encoder: 'campplus' });
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: notList }), manifest(notList), /"views.speaker_heads" must be an array/);
    const good = speakerHead('views-speaker-head', [{ encoder: 'campplus', head: { weights: Array.from({ length: 192 }, (_, i) => i / 1000), bias: 0.5 } }]);
    const heads = ModelRegistry.loadSync({ modelsDir: good }).get('gender').views!.speakerHeads;
    assert.deepEqual(heads.map((h) => [h.encoder.name, h.head.weights.length, h.head.bias[1]]), [['encoder:campplus', 384, 0.5]]);
  });

  it('reads a model\'s scored provisional plan (provisional.json `shipped`; absent: none), and rejects one out of range naming the file', () => {
    const placeholders = modelsDir('provisional');
    assert.equal(ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').provisional, undefined, 'no provisional.json: no plan of its own');
    const file = path.join(placeholders, 'speech', 'provisional.json');
    fs.writeFileSync(file, JSON.stringify({ shipped: { lookahead_steps: 2, stride_steps: 1, left_context_steps: 4 } }));
    assert.deepEqual(ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').provisional, { lookahead: 2, stride: 1, leftContext: 4 });
    // the placeholder speech model sees 5 steps back and 3 ahead
    for (const [shipped, re] of [
      [{ lookahead_steps: 4, stride_steps: 1, left_context_steps: 4 }, /shipped.lookahead_steps" must be an integer from 0 to 3, got 4/],
      [{ lookahead_steps: 1, stride_steps: 0, left_context_steps: 4 }, /shipped.stride_steps/],
      [{ lookahead_steps: 1, stride_steps: 1, left_context_steps: 1.5 }, /shipped.left_context_steps/],
      [undefined, /"shipped" must be an object/],
    ] as const) {
      fs.writeFileSync(file, JSON.stringify({ shipped }));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: placeholders }), file, re);
    }
    fs.writeFileSync(file, '{"shipped": ');
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: placeholders }), file, /invalid JSON/);
  });

  it('reads a model\'s causal provisional head (provisional.json `head`; absent: none), and rejects a bad one naming the file', () => {
    const placeholders = modelsDir('provisional-head');
    const dir = path.join(placeholders, 'speech');
    const file = path.join(dir, 'provisional.json');
    fs.writeFileSync(file, JSON.stringify({ shipped: { lookahead_steps: 1, stride_steps: 1, left_context_steps: 4 } }));
    assert.equal(ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').provisionalHead, undefined, 'no head: none');
    fs.copyFileSync(path.join(dir, ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').manifest.file), path.join(dir, 'head.onnx'));
    const head = { file: 'head.onnx', input: 'features', state_input: 'state', output: 'probs', state_output: 'state_out', state_size: 12, delay_steps: 0 };
    fs.writeFileSync(file, JSON.stringify({ shipped: { lookahead_steps: 1, stride_steps: 1, left_context_steps: 4 }, head }));
    assert.deepEqual(ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').provisionalHead, {
      stride: 1, modelPath: path.join(dir, 'head.onnx'), inputName: 'features', stateInputName: 'state', outputName: 'probs', stateOutputName: 'state_out', stateSize: 12, delaySteps: 0,
    });
    fs.writeFileSync(file, JSON.stringify({ shipped: { lookahead_steps: 1, stride_steps: 1, left_context_steps: 4 }, head: { ...head, stride_steps: 4 } }));
    assert.equal(ModelRegistry.loadSync({ modelsDir: placeholders }).get('speech').provisionalHead!.stride, 4, 'a call every 4 steps');
    // the placeholder speech model sees 3 steps ahead: a head may not wait longer
    for (const [bad, re] of [
      [{ ...head, delay_steps: 4 }, /"head.delay_steps" must be an integer from 0 to 3/],
      [{ ...head, state_size: 0 }, /"head.state_size" must be a positive integer/],
      [{ ...head, stride_steps: 0 }, /"head.stride_steps" must be an integer from 1 to 64/],
      [{ ...head, output: '' }, /"head.output" must be a non-empty string/],
      [{ ...head, file: 'missing.onnx' }, /model file missing/],
      ['head.onnx', /"head" must be an object/],
    ] as const) {
      fs.writeFileSync(file, JSON.stringify({ shipped: { lookahead_steps: 1, stride_steps: 1, left_context_steps: 4 }, head: bad }));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: placeholders }), (bad as { file?: string }).file === 'missing.onnx' ? path.join(dir, 'missing.onnx') : file, re);
    }
  });

  it('reads a model\'s confidence temperature (calibration.json `shipped.temperature`; absent: none), and rejects a bad one naming the file', () => {
    const placeholders = modelsDir('calibration');
    assert.equal(ModelRegistry.loadSync({ modelsDir: placeholders }).get('arousal').confidenceTemperature, undefined, 'no calibration.json: none');
    const file = path.join(placeholders, 'arousal', 'calibration.json');
    fs.writeFileSync(file, JSON.stringify({ shipped: { temperature: 2.5 } }));
    const registry = ModelRegistry.loadSync({ modelsDir: placeholders });
    assert.equal(registry.get('arousal').confidenceTemperature, 2.5);
    assert.deepEqual(registry.confidenceTemperatures(), { arousal: 2.5 }, 'only the models with one');
    for (const shipped of [{ temperature: 0 }, { temperature: 101 }, { temperature: '2' }, {}, undefined]) {
      fs.writeFileSync(file, JSON.stringify({ shipped }));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: placeholders }), file, /"shipped.temperature" must be a number from 0.05 to 100/);
    }
    fs.writeFileSync(file, '{"shipped": ');
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: placeholders }), file, /invalid JSON/);
  });

  it('reads the speaker map\'s streams bar (online_threshold_step; absent: 0), provisional lookahead (absent: 0) and whitening (absent: none), and rejects a bad one naming the file', () => {
    const withMap = (name: string, f?: (b: Record<string, unknown>) => void): string => {
      const dir = path.join(tmp, name);
      fs.cpSync(path.join(packageRoot(), 'models', 'speakers'), path.join(dir, 'speakers'), { recursive: true });
      fs.cpSync(path.join(packageRoot(), 'models', 'encoders'), path.join(dir, 'encoders'), { recursive: true });
      if (f) {
        const file = path.join(dir, 'speakers', 'manifest.json');
        const m = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>>;
        f(m['speaker_map']!);
        fs.writeFileSync(file, JSON.stringify(m));
      }
      return dir;
    };
    const shipped = ModelRegistry.loadSync({ modelsDir: withMap('map-ok') }).get('speakers').speakerMap!;
    const written = (JSON.parse(fs.readFileSync(path.join(packageRoot(), 'models', 'speakers', 'manifest.json'), 'utf8')) as { speaker_map: Record<string, number> }).speaker_map;
    assert.deepEqual([shipped.params.onlineThreshold, shipped.params.onlineThresholdStep], [written['online_threshold'], written['online_threshold_step']]);
    assert.ok(written['online_threshold_step']! > 0, 'the shipped map lowers its bar per known speaker');
    const older = ModelRegistry.loadSync({ modelsDir: withMap('map-no-step', (b) => delete b['online_threshold_step']) }).get('speakers').speakerMap!;
    assert.equal(older.params.onlineThresholdStep, 0, 'a manifest before 1.1.0: one fixed threshold');
    const bad = withMap('map-bad-step', (b) => (b['online_threshold_step'] = 2));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: bad }), path.join(bad, 'speakers', 'manifest.json'), /online_threshold_step/);
    // the streams' provisional lookahead (speakers 1.3.1; absent: 0, at once); under one window
    assert.equal(shipped.provisionalLookaheadSteps, written['provisional_lookahead_steps']);
    assert.ok(shipped.provisionalLookaheadSteps > 0);
    assert.equal(older.provisionalLookaheadSteps, shipped.provisionalLookaheadSteps);
    const atOnce = ModelRegistry.loadSync({ modelsDir: withMap('map-no-lookahead', (b) => delete b['provisional_lookahead_steps']) }).get('speakers').speakerMap!;
    assert.equal(atOnce.provisionalLookaheadSteps, 0, 'a manifest before 1.3.1: at once');
    for (const v of [-1, 2.5, 25, '4']) {
      const wrong = withMap(`map-bad-lookahead-${String(v)}`, (b) => (b['provisional_lookahead_steps'] = v));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), path.join(wrong, 'speakers', 'manifest.json'), /provisional_lookahead_steps/);
    }
    // streams without a count re-cluster freely from this many windows (speakers 1.8.0; absent: 0, never)
    assert.equal(shipped.recluster.freeMinWindows, written['free_recluster_min_windows']);
    assert.ok(shipped.recluster.freeMinWindows > 0);
    const neverFree = ModelRegistry.loadSync({ modelsDir: withMap('map-no-free', (b) => delete b['free_recluster_min_windows']) }).get('speakers').speakerMap!;
    assert.equal(neverFree.recluster.freeMinWindows, 0, 'a manifest before 1.8.0: streams never re-cluster without a count');
    for (const v of [-1, 2.5, '140']) {
      const wrong = withMap(`map-bad-free-${String(v)}`, (b) => (b['free_recluster_min_windows'] = v));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), path.join(wrong, 'speakers', 'manifest.json'), /free_recluster_min_windows" must be an integer in 0\.\.100000/);
    }
    // ... and how often (speakers 1.8.1; absent: the two-party streams' recluster_every)
    assert.equal(shipped.recluster.freeEvery, written['free_recluster_every']);
    const sameEvery = ModelRegistry.loadSync({ modelsDir: withMap('map-no-free-every', (b) => delete b['free_recluster_every']) }).get('speakers').speakerMap!;
    assert.equal(sameEvery.recluster.freeEvery, written['recluster_every'], 'a manifest before 1.8.1: the two-party period');
    for (const v of [0, 2.5, '4']) {
      const wrong = withMap(`map-bad-free-every-${String(v)}`, (b) => (b['free_recluster_every'] = v));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), path.join(wrong, 'speakers', 'manifest.json'), /free_recluster_every" must be an integer in 1\.\.1000/);
    }
    // streams' sparse windows (speakers 1.9.0; absent: none): fewer voiced steps than the schedule's, at least one
    assert.equal(shipped.sparseMinVoicedSteps, written['sparse_min_voiced_steps']);
    assert.ok(shipped.sparseMinVoicedSteps! >= 1 && shipped.sparseMinVoicedSteps! < shipped.schedule.minVoicedSteps);
    const noSparse = ModelRegistry.loadSync({ modelsDir: withMap('map-no-sparse', (b) => delete b['sparse_min_voiced_steps']) }).get('speakers').speakerMap!;
    assert.equal(noSparse.sparseMinVoicedSteps, undefined, 'a manifest before 1.9.0: no sparse windows');
    for (const v of [0, 2.5, written['min_voiced_steps'], '4']) {
      const wrong = withMap(`map-bad-sparse-${String(v)}`, (b) => (b['sparse_min_voiced_steps'] = v));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), path.join(wrong, 'speakers', 'manifest.json'), /sparse_min_voiced_steps" must be an integer in 1\.\.11/);
    }
    // file jobs' speech gate (speakers 1.9.1; absent: windows decided on their levels alone); never the streams' schedule
    assert.deepEqual(shipped.fileSpeechGate, { steps: 13, minSpeechSteps: 0, maxNonSpeechSteps: 10 });
    assert.equal(shipped.schedule.speechGate, undefined, 'streams are not gated');
    const ungated = ModelRegistry.loadSync({ modelsDir: withMap('map-no-gate', (b) => delete b['file_speech_gate']) }).get('speakers').speakerMap!;
    assert.equal(ungated.fileSpeechGate, undefined, 'a manifest before 1.9.1: no gate');
    for (const [i, g] of [{ steps: 26, min_speech_steps: 0 }, { steps: 13, min_speech_steps: 0, max_non_speech_steps: 14 }, 6].entries()) {
      const wrong = withMap(`map-bad-gate-${i}`, (b) => (b['file_speech_gate'] = g));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), path.join(wrong, 'speakers', 'manifest.json'), /"speaker_map\.file_speech_gate" must be \{steps: 1\.\.25/);
    }
    // the whitening (speakers 1.4.0; absent or "": none): a square matrix of the encoder's dim beside the manifest
    const dim = shipped.encoder.dim;
    assert.equal(shipped.whitening?.length, dim);
    assert.ok(shipped.whitening!.every((row) => row.length === dim));
    assert.equal(atOnce.whitening?.length, dim, 'kept when another key is absent');
    const plain = ModelRegistry.loadSync({
      modelsDir: withMap('map-no-whitening', (b) => {
        delete b['whitening'];
        delete b['alike_merge'];
        delete b['whitened_scores'];
      }),
    }).get('speakers').speakerMap!;
    assert.equal(plain.whitening, undefined, 'a manifest before 1.4.0: plain embeddings');
    // files' merge of speakers a learnt rule calls one voice (speakers 1.6.0; absent: none); needs the whitening
    const rule = written['alike_merge'] as unknown as Record<string, number>;
    const p = rule['min_probability']!;
    assert.deepEqual(shipped.alikeMerge, {
      bias: rule['bias'],
      weights: PAIR_FEATURES.map((k) => rule[k]),
      minLogit: Math.log(p / (1 - p)),
      maxWindows: rule['max_windows'],
      apartLogit: Math.log(rule['keep_apart_below']! / (1 - rule['keep_apart_below']!)),
      // speakers 1.9.2: short clusters the rule calls another voice are speakers
      shortSpeaker: { minS: rule['short_speaker_min_s'], belowLogit: Math.log(rule['short_speaker_below']! / (1 - rule['short_speaker_below']!)) },
    });
    assert.equal(plain.alikeMerge, undefined);
    // files' windows scored against whitened centroids (speakers 1.7.0; absent: the clustered view)
    assert.equal(shipped.whitenedScores, true);
    assert.equal(plain.whitenedScores, undefined);
    // the clustering's keep-apart (speakers 1.7.0; absent: none)
    const mergeOnly = ModelRegistry.loadSync({
      modelsDir: withMap('map-merge-only', (b) => {
        const r = { ...(b['alike_merge'] as Record<string, unknown>) };
        delete r['keep_apart_below'];
        delete r['short_speaker_min_s'];
        delete r['short_speaker_below'];
        b['alike_merge'] = r;
      }),
    }).get('speakers').speakerMap!;
    assert.equal(mergeOnly.alikeMerge?.apartLogit, undefined, 'a manifest of 1.6.0: nothing kept apart');
    assert.equal(mergeOnly.alikeMerge?.minLogit, shipped.alikeMerge?.minLogit);
    const noMerge = ModelRegistry.loadSync({ modelsDir: withMap('map-no-merge', (b) => delete b['alike_merge']) }).get('speakers').speakerMap!;
    assert.equal(noMerge.alikeMerge, undefined, 'a manifest before 1.6.0: no merge');
    assert.equal(noMerge.whitening?.length, dim);
    const manifestOf = (dir: string): string => path.join(dir, 'speakers', 'manifest.json');
    const ruleWith = (edit: (r: Record<string, unknown>) => void) => (b: Record<string, unknown>) => {
      const r = { ...(b['alike_merge'] as Record<string, unknown>) };
      edit(r);
      b['alike_merge'] = r;
    };
    for (const [name, edit, re] of [
      ['probability range', ruleWith((r) => (r['min_probability'] = 1)), /alike_merge.min_probability" must be a number in \(0, 1\)/],
      ['probability type', ruleWith((r) => (r['min_probability'] = '0.4')), /alike_merge.min_probability" must be a number/],
      ['weight missing', ruleWith((r) => delete r[PAIR_FEATURES[2]]), new RegExp(`alike_merge.${PAIR_FEATURES[2]}" must be a finite number`)],
      ['bias type', ruleWith((r) => (r['bias'] = null)), /alike_merge.bias" must be a finite number/],
      ['windows', ruleWith((r) => (r['max_windows'] = 0.5)), /alike_merge.max_windows" must be an integer >= 1/],
      ['keep apart range', ruleWith((r) => (r['keep_apart_below'] = 0)), /alike_merge.keep_apart_below" must be a number in \(0, 1\)/],
      ['keep apart type', ruleWith((r) => (r['keep_apart_below'] = true)), /alike_merge.keep_apart_below" must be a number in \(0, 1\)/],
      ['short range', ruleWith((r) => (r['short_speaker_below'] = 1)), /alike_merge.short_speaker_below" must be a number in \(0, 1\)/],
      ['short seconds', ruleWith((r) => (r['short_speaker_min_s'] = -1)), /alike_merge.short_speaker_min_s" must be a number in \[0, 3600\]/],
      ['short alone', ruleWith((r) => delete r['short_speaker_min_s']), /short_speaker_below" and "speaker_map.alike_merge.short_speaker_min_s" go together/],
      ['short without keep apart', ruleWith((r) => delete r['keep_apart_below']), /short_speaker_below" needs "speaker_map.alike_merge.keep_apart_below"/],
      ['not an object', (b: Record<string, unknown>) => (b['alike_merge'] = 0.73), /"speaker_map.alike_merge" must be an object/],
      ['alone', (b: Record<string, unknown>) => delete b['whitening'], /alike_merge" needs "speaker_map.whitening"/],
      ['scores alone', (b: Record<string, unknown>) => ((b['whitening'] = ''), delete b['alike_merge']), /whitened_scores" needs "speaker_map.whitening"/],
      ['scores type', (b: Record<string, unknown>) => (b['whitened_scores'] = 'yes'), /"speaker_map.whitened_scores" must be true or false/],
    ] as const) {
      const wrong = withMap(`map-bad-merge-${name.replace(/ /g, '-')}`, edit);
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), manifestOf(wrong), re);
    }
    for (const [name, v, re] of [
      ['path', '../gender/manifest.json', /plain \.json file name/],
      ['type', 7, /file name or ""/],
      ['missing', 'absent.json', /cannot be read/],
    ] as const) {
      const wrong = withMap(`map-bad-whitening-${name}`, (b) => (b['whitening'] = v));
      expectLoadError(() => ModelRegistry.loadSync({ modelsDir: wrong }), manifestOf(wrong), re);
    }
    const shortRows = withMap('map-bad-whitening-shape');
    const file = path.join(shortRows, 'speakers', 'whitening.json');
    const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as { matrix: number[][] };
    doc.matrix = doc.matrix.slice(1);
    fs.writeFileSync(file, JSON.stringify(doc));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: shortRows }), manifestOf(shortRows), new RegExp(`${dim} rows of ${dim} finite numbers`));
  });

  it('whitens a stream\'s embedding with the shipped matrix to another unit vector', () => {
    const map = ModelRegistry.loadSync({ modelsDir: path.join(packageRoot(), 'models') }).get('speakers').speakerMap!;
    const dim = map.encoder.dim;
    const e = normalise(Float64Array.from({ length: dim }, (_, i) => Math.sin(i + 1)));
    const w = whiten(map.whitening!, e);
    assert.ok(Math.abs(dot(w, w) - 1) < 1e-12);
    assert.ok(dot(w, e) < 0.999, 'the matrix is not the identity');
  });

  it('reads a model\'s streaming graph, and rejects a missing, corrupt or inconsistent one naming the file', async () => {
    const ok = copy('stream-ok');
    const g = (await ModelRegistry.load({ modelsDir: ok })).get('gender');
    assert.equal(g.streaming?.modelPath, path.join(ok, 'gender', 'stream.onnx'));
    assert.equal(g.streaming?.startModelPath, path.join(ok, 'gender', 'stream_start.onnx'));
    assert.equal(g.streaming?.delaySteps, g.context.rightSteps);
    assert.ok(g.streaming!.startSteps > 0);
    assert.ok(g.streaming!.stateSize > 0);

    const missing = copy('stream-missing');
    fs.rmSync(path.join(missing, 'gender', 'stream_start.onnx'));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: missing }), path.join(missing, 'gender', 'stream_start.onnx'), /model file missing/);

    const manifest = (dir: string): string => path.join(dir, 'gender', 'manifest.json');
    const edit = (dir: string, f: (st: Record<string, unknown>) => void): void => {
      const m = JSON.parse(fs.readFileSync(manifest(dir), 'utf8')) as Record<string, Record<string, unknown>>;
      f(m['streaming']!);
      fs.writeFileSync(manifest(dir), JSON.stringify(m));
    };
    const delay = copy('stream-delay');
    edit(delay, (st) => (st['delay_steps'] = 3));
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: delay }), manifest(delay), /delay_steps/);
    const size = copy('stream-size');
    edit(size, (st) => (st['state_size'] = 10));
    await assert.rejects(ModelRegistry.load({ modelsDir: size }), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'MODEL_LOAD_FAILED');
      assert.ok(e.message.startsWith(path.join(size, 'gender', 'stream_start.onnx')), e.message);
      return true;
    });
    const corrupt = copy('stream-corrupt');
    fs.writeFileSync(path.join(corrupt, 'gender', 'stream.onnx'), 'not onnx');
    await assert.rejects(ModelRegistry.load({ modelsDir: corrupt }), /stream\.onnx: not a loadable ONNX model/);
  });

  it('a models dir that does not exist fails with its path', () => {
    const dir = path.join(tmp, 'nope');
    expectLoadError(() => ModelRegistry.loadSync({ modelsDir: dir }), dir, /cannot read the models directory/);
  });

  it('defaults to <package root>/models, overridable with AURIS_MODELS_DIR', () => {
    const saved = process.env['AURIS_MODELS_DIR'];
    try {
      delete process.env['AURIS_MODELS_DIR'];
      assert.equal(defaultModelsDir(), path.join(packageRoot(), 'models'));
      assert.ok(fs.existsSync(path.join(packageRoot(), 'package.json')));
      process.env['AURIS_MODELS_DIR'] = tmp;
      assert.equal(defaultModelsDir(), tmp);
    } finally {
      if (saved === undefined) delete process.env['AURIS_MODELS_DIR'];
      else process.env['AURIS_MODELS_DIR'] = saved;
    }
  });
});
