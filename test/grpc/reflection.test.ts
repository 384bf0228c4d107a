/**
 * gRPC server reflection over a real socket: the service list includes the standard health
 * service, and each file descriptor is named by its path in proto/ (what grpcurl and other
 * tools match against the .proto file).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { startServer, type TestServer } from './helpers';

/** The name (field 1) of a serialized FileDescriptorProto. */
function descriptorName(buf: Buffer): string {
  assert.equal(buf[0], 0x0a);
  let len = 0;
  let shift = 0;
  let i = 1;
  for (;;) {
    const b = buf[i++]!;
    len |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  return buf.toString('utf8', i, i + len);
}

describe('gRPC reflection', () => {
  let ts: TestServer;
  before(async () => {
    ts = await startServer();
  });
  after(async () => {
    await ts.close();
  });

  it('lists AudioAnalysis and grpc.health.v1.Health; descriptors carry their proto paths', async () => {
    const protoPath = path.join(path.dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto', 'grpc', 'reflection', 'v1', 'reflection.proto');
    const def = protoLoader.loadSync(protoPath, { keepCase: true });
    const Reflection = (grpc.loadPackageDefinition(def) as any).grpc.reflection.v1.ServerReflection as grpc.ServiceClientConstructor;
    const c = new Reflection(ts.address, grpc.credentials.createInsecure()) as any;
    const call = c.ServerReflectionInfo();
    const replies: any[] = [];
    const done = new Promise<void>((resolve, reject) => {
      call.on('data', (r: unknown) => replies.push(r));
      call.on('end', resolve);
      call.on('error', reject);
    });
    call.write({ list_services: '*' });
    call.write({ file_containing_symbol: 'audioanalysis.v1.AudioAnalysis' });
    call.write({ file_containing_symbol: 'grpc.health.v1.Health' });
    call.write({ file_by_filename: 'audioanalysis/v1/audio_analysis.proto' });
    call.end();
    await done;
    c.close();
    const services = replies[0].list_services_response.service.map((s: { name: string }) => s.name).sort();
    assert.deepEqual(services, ['audioanalysis.v1.AudioAnalysis', 'grpc.health.v1.Health']);
    const names = (r: { file_descriptor_response: { file_descriptor_proto: Buffer[] } }) => r.file_descriptor_response.file_descriptor_proto.map(descriptorName);
    assert.deepEqual(names(replies[1]), ['audioanalysis/v1/audio_analysis.proto']);
    assert.deepEqual(names(replies[2]), ['grpc/health/v1/health.proto']);
    assert.deepEqual(names(replies[3]), ['audioanalysis/v1/audio_analysis.proto']);
  });
});
