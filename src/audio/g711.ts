/**
 * G.711 (ITU-T) mu-law and A-law to 16-bit linear PCM, for telephony streams: one 256-entry
 * table each, so a stream's bytes expand with one lookup per sample before the front end.
 */

function mulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + 0x84) << exponent) - 0x84;
  return u & 0x80 ? -magnitude : magnitude;
}

function alawToLinear(byte: number): number {
  const a = byte ^ 0x55;
  const exponent = (a >> 4) & 0x07;
  const mantissa = a & 0x0f;
  const magnitude = exponent === 0 ? (mantissa << 4) + 8 : ((mantissa << 4) + 0x108) << (exponent - 1);
  return a & 0x80 ? magnitude : -magnitude;
}

const table = (f: (b: number) => number): Int16Array => Int16Array.from({ length: 256 }, (_, b) => f(b));

export const G711_TABLES = { mulaw: table(mulawToLinear), alaw: table(alawToLinear) } as const;

export type G711Law = keyof typeof G711_TABLES;

/** 8-bit G.711 samples -> s16le bytes (platform byte order, little-endian on every supported CPU). */
export function g711ToS16(law: G711Law, bytes: Uint8Array): Uint8Array {
  const t = G711_TABLES[law];
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = t[bytes[i]!]!;
  return new Uint8Array(out.buffer);
}
