/**
 * Development/test helper: writes a tiny *placeholder* model honouring the model contract
 * of docs/features.md (input `features` [B, 4S, 64] -> output `probs` [B, S, C], softmax,
 * fully convolutional in time, zero-padded at the edges) plus its manifest.json.
 *
 * The ONNX protobuf is encoded by hand here (no Python/onnx dependency), so tests can
 * build models in a temp dir on any machine. Weights are deterministic pseudo-random
 * numbers; the outputs mean nothing. Manifests say `"placeholder": true`.
 *
 * Graph: Transpose -> Conv(k=4, stride 4: frames -> steps) -> Relu
 *        -> Conv(k=lA+rA+1, pads [lA, rA]) -> Relu -> Conv(k=lB+rB+1, pads [lB, rB])
 *        -> Transpose -> Softmax(axis -1)
 * Context: left = lA + lB, right = rA + rB steps.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BUILTIN_RAW_KEYS } from '../analysis/policies';

// ---- minimal protobuf writer ----
type Bytes = Uint8Array;

function varint(n: number | bigint): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const tag = (field: number, wire: number): number[] => varint((field << 3) | wire);
const concat = (parts: (Bytes | number[])[]): Bytes => {
  const len = parts.reduce((a, p) => a + p.length, 0);
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
};
const fInt = (field: number, n: number | bigint): number[] => [...tag(field, 0), ...varint(n)];
const fBytes = (field: number, b: Bytes): Bytes => concat([tag(field, 2), varint(b.length), b]);
const fStr = (field: number, s: string): Bytes => fBytes(field, new TextEncoder().encode(s));
const fFloat = (field: number, x: number): Bytes => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, x, true);
  return concat([tag(field, 5), b]);
};

// ONNX enums
const FLOAT = 1;
const ATTR_FLOAT = 1;
const ATTR_INT = 2;
const ATTR_INTS = 7;

type Attr = { name: string; i?: number; ints?: number[]; f?: number };
function attribute(a: Attr): Bytes {
  const parts: (Bytes | number[])[] = [fStr(1, a.name)];
  if (a.f !== undefined) parts.push(fFloat(2, a.f), fInt(20, ATTR_FLOAT));
  else if (a.i !== undefined) parts.push(fInt(3, a.i), fInt(20, ATTR_INT));
  else if (a.ints) {
    for (const v of a.ints) parts.push(fInt(8, v));
    parts.push(fInt(20, ATTR_INTS));
  }
  return concat(parts);
}
function node(op: string, inputs: string[], outputs: string[], name: string, attrs: Attr[] = []): Bytes {
  return concat([
    ...inputs.map((s) => fStr(1, s)),
    ...outputs.map((s) => fStr(2, s)),
    fStr(3, name),
    fStr(4, op),
    ...attrs.map((a) => fBytes(5, attribute(a))),
  ]);
}
function tensor(name: string, dims: number[], data: Float32Array): Bytes {
  const raw = new Uint8Array(data.length * 4);
  const dv = new DataView(raw.buffer);
  data.forEach((x, i) => dv.setFloat32(i * 4, x, true));
  return concat([...dims.map((d) => fInt(1, d)), fInt(2, FLOAT), fStr(8, name), fBytes(9, raw)]);
}
function valueInfo(name: string, dims: (number | string)[]): Bytes {
  const shape = concat(dims.map((d) => fBytes(1, typeof d === 'number' ? new Uint8Array(fInt(1, d)) : fStr(2, d))));
  const tensorType = concat([fInt(1, FLOAT), fBytes(2, shape)]);
  return concat([fStr(1, name), fBytes(2, fBytes(1, tensorType))]);
}

/** Deterministic PRNG (mulberry32) -> roughly N(0, 1) via sum of uniforms. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  const uni = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return () => uni() + uni() + uni() + uni() - 2; // mean 0, var 1/3
}

export interface PlaceholderSpec {
  name: string;
  rawKeys?: readonly string[];
  /** [left, right] padding of the two context convolutions; context = sum. Default [[3,1],[2,2]] -> left 5, right 3. */
  pads?: [[number, number], [number, number]];
  hidden?: number;
  seed?: number;
}

/** ONNX bytes of a placeholder model. */
export function placeholderOnnx(spec: PlaceholderSpec): Uint8Array {
  const rawKeys = spec.rawKeys ?? BUILTIN_RAW_KEYS[spec.name] ?? ['a', 'b'];
  const C = rawKeys.length;
  const H = spec.hidden ?? 16;
  const [[lA, rA], [lB, rB]] = spec.pads ?? [
    [3, 1],
    [2, 2],
  ];
  const kA = lA + rA + 1;
  const kB = lB + rB + 1;
  let seed = spec.seed ?? 0;
  for (const ch of spec.name) seed = (seed * 31 + ch.charCodeAt(0)) >>> 0;
  const rnd = seededRandom(seed);
  const rand = (n: number, scale: number): Float32Array => Float32Array.from({ length: n }, () => rnd() * scale);

  const inits = [
    tensor('w1', [H, 64, 4], rand(H * 64 * 4, 1 / 16)),
    tensor('b1', [H], rand(H, 0.5)),
    tensor('w2', [H, H, kA], rand(H * H * kA, 1 / Math.sqrt(H * kA))),
    tensor('b2', [H], rand(H, 0.5)),
    tensor('w3', [C, H, kB], rand(C * H * kB, 2 / Math.sqrt(H * kB))),
    tensor('b3', [C], rand(C, 0.5)),
  ];
  const nodes = [
    node('Transpose', ['features'], ['x_t'], 't0', [{ name: 'perm', ints: [0, 2, 1] }]),
    node('Conv', ['x_t', 'w1', 'b1'], ['h1'], 'conv_frames', [
      { name: 'kernel_shape', ints: [4] },
      { name: 'strides', ints: [4] },
    ]),
    node('Relu', ['h1'], ['h1r'], 'relu1'),
    node('Conv', ['h1r', 'w2', 'b2'], ['h2'], 'conv_ctx_a', [
      { name: 'kernel_shape', ints: [kA] },
      { name: 'pads', ints: [lA, rA] },
    ]),
    node('Relu', ['h2'], ['h2r'], 'relu2'),
    node('Conv', ['h2r', 'w3', 'b3'], ['logits_t'], 'conv_ctx_b', [
      { name: 'kernel_shape', ints: [kB] },
      { name: 'pads', ints: [lB, rB] },
    ]),
    node('Transpose', ['logits_t'], ['logits'], 't1', [{ name: 'perm', ints: [0, 2, 1] }]),
    node('Softmax', ['logits'], ['probs'], 'softmax', [{ name: 'axis', i: -1 }]),
  ];
  const graph = concat([
    ...nodes.map((n) => fBytes(1, n)),
    fStr(2, `${spec.name}_placeholder`),
    ...inits.map((t) => fBytes(5, t)),
    fBytes(11, valueInfo('features', ['B', 'T', 64])),
    fBytes(12, valueInfo('probs', ['B', 'S', C])),
  ]);
  return concat([
    fInt(1, 8), // ir_version
    fStr(2, 'auris-placeholder'),
    fBytes(7, graph),
    fBytes(8, concat([fStr(1, ''), fInt(2, 17)])), // opset ai.onnx 17
  ]);
}

/** The manifest.json object of a placeholder model. */
export function placeholderManifest(spec: PlaceholderSpec): Record<string, unknown> {
  const rawKeys = spec.rawKeys ?? BUILTIN_RAW_KEYS[spec.name] ?? ['a', 'b'];
  const [[lA, rA], [lB, rB]] = spec.pads ?? [
    [3, 1],
    [2, 2],
  ];
  const left = lA + lB;
  const right = rA + rB;
  return {
    name: spec.name,
    version: '0.0.0-placeholder',
    placeholder: true,
    file: 'model.onnx',
    input: 'features',
    output: 'probs',
    raw_keys: [...rawKeys],
    features: {
      kind: 'logmel',
      sample_rate: 16000,
      n_fft: 512,
      hop: 256,
      n_mels: 64,
      fmin: 50,
      fmax: 8000,
      log_floor: 1e-8,
      frames_per_step: 4,
    },
    context: { left_steps: left, right_steps: right },
    receptive_field_ms: (left + right + 1) * 64,
    lookahead_ms: right * 64 + 8,
    training_data_sha256: null,
    metrics: {},
  };
}

/**
 * Writes `<dir>/<name>/{model.onnx,manifest.json}` for each spec (default: speech, arousal, gender).
 * Returns `dir`.
 */
export function writePlaceholderModels(dir: string, specs: PlaceholderSpec[] = [{ name: 'speech' }, { name: 'arousal' }, { name: 'gender' }]): string {
  for (const spec of specs) {
    const d = path.join(dir, spec.name);
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'model.onnx'), placeholderOnnx(spec));
    fs.writeFileSync(path.join(d, 'manifest.json'), JSON.stringify(placeholderManifest(spec), null, 2) + '\n');
  }
  return dir;
}
