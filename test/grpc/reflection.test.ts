/**
 * gRPC server reflection over a real socket: the service list includes the standard health
 * service, and each file descriptor is named by its path in proto/ (what grpcurl and other
 * tools match against the .proto file).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { reflectionQuery, startServer, type TestServer } from './helpers';

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
    const replies = await reflectionQuery(ts.address, [
      { list_services: '*' },
      { file_containing_symbol: 'audioanalysis.v1.AudioAnalysis' },
      { file_containing_symbol: 'grpc.health.v1.Health' },
      { file_by_filename: 'audioanalysis/v1/audio_analysis.proto' },
    ]);
    const services = replies[0].list_services_response.service.map((s: { name: string }) => s.name).sort();
    assert.deepEqual(services, ['audioanalysis.v1.AudioAnalysis', 'grpc.health.v1.Health']);
    const names = (r: { file_descriptor_response: { file_descriptor_proto: Buffer[] } }) => r.file_descriptor_response.file_descriptor_proto.map(descriptorName);
    assert.deepEqual(names(replies[1]), ['audioanalysis/v1/audio_analysis.proto']);
    assert.deepEqual(names(replies[2]), ['grpc/health/v1/health.proto']);
    assert.deepEqual(names(replies[3]), ['audioanalysis/v1/audio_analysis.proto']);
  });
});
