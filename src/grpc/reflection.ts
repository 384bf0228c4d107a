/**
 * What server reflection serves: the audioanalysis.v1 service and the standard health service
 * (grpcurl and similar tools list both), each file descriptor named by its real path
 * (`audioanalysis/v1/audio_analysis.proto`, `grpc/health/v1/health.proto`). protobufjs names
 * a loaded file after its package (`audioanalysis_v1.proto`), which tools then cannot match to
 * the file in proto/.
 */
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { LOADER_OPTIONS, packageDefinition, PROTO_FILE } from './proto';

export const HEALTH_PROTO_FILE = 'grpc/health/v1/health.proto';

/** The package definition handed to @grpc/reflection. */
export function reflectionPackageDefinition(): protoLoader.PackageDefinition {
  const health = protoLoader.loadSync(healthProtoPath, LOADER_OPTIONS);
  return {
    ...renameFiles(packageDefinition(), 'audioanalysis_v1.proto', PROTO_FILE),
    ...renameFiles(health, 'grpc_health_v1.proto', HEALTH_PROTO_FILE),
  };
}

function renameFiles(def: protoLoader.PackageDefinition, from: string, to: string): protoLoader.PackageDefinition {
  const out: protoLoader.PackageDefinition = {};
  for (const [name, entry] of Object.entries(def)) {
    const e = entry as { fileDescriptorProtos?: Buffer[] };
    out[name] = e.fileDescriptorProtos ? ({ ...entry, fileDescriptorProtos: e.fileDescriptorProtos.map((b) => renameDescriptor(b, from, to)) } as typeof entry) : entry;
  }
  return out;
}

/**
 * A serialized FileDescriptorProto with its `name` (field 1, written first) replaced when it
 * is `from`. The files import nothing, so no dependency names need the same change.
 */
export function renameDescriptor(buf: Buffer, from: string, to: string): Buffer {
  if (buf[0] !== 0x0a) return buf;
  const { value: len, next } = readVarint(buf, 1);
  if (buf.toString('utf8', next, next + len) !== from) return buf;
  const name = Buffer.from(to, 'utf8');
  return Buffer.concat([Buffer.from([0x0a]), writeVarint(name.length), name, buf.subarray(next + len)]);
}

function readVarint(buf: Buffer, at: number): { value: number; next: number } {
  let value = 0;
  let shift = 0;
  let i = at;
  for (;;) {
    const b = buf[i++]!;
    value += (b & 0x7f) * 2 ** shift;
    if (!(b & 0x80)) return { value, next: i };
    shift += 7;
  }
}

function writeVarint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 0x80) {
    bytes.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}
