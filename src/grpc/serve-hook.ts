/**
 * `auris serve` hook: starts the gRPC streaming server beside the REST server, on
 * config.host:config.grpcPort (GRPC_PORT, default 50051), with the same API keys (the REST
 * server's configured keys, or its generated development key), and makes the REST server's
 * close() shut the gRPC server down first (streams end cleanly, see AnalysisGrpcServer.close).
 */
import type { ApiKeyEntry } from '../config';
import { ApiKeyRegistry } from '../http/auth';
import type { AurisServer } from '../http/server';
import { AnalysisGrpcServer, GrpcServerOptions } from './server';

/** The API keys the REST server accepts. */
export function restApiKeys(server: Pick<AurisServer, 'config' | 'devKey'>): ApiKeyEntry[] {
  if (server.config.apiKeys.length > 0) return server.config.apiKeys;
  // Same owner as src/http/auth.ts generateDevKey().
  return server.devKey ? [{ key: server.devKey, organizationId: 'dev', projectId: 'dev' }] : [];
}

export async function attachGrpcServer(server: AurisServer, options: Partial<GrpcServerOptions> = {}): Promise<AnalysisGrpcServer> {
  const log = server.app.log.child({ component: 'grpc' });
  const grpcServer = await AnalysisGrpcServer.create({
    keys: new ApiKeyRegistry(restApiKeys(server)),
    modelsDir: server.config.modelsDir,
    log,
    ...options,
  });
  let port: number;
  try {
    port = await grpcServer.listen(server.config.host, server.config.grpcPort);
  } catch (e) {
    // e.g. the port is taken: `auris serve` fails as a whole rather than half-started.
    await grpcServer.close(0);
    await server.close();
    throw e;
  }
  log.info({ host: server.config.host, port, service: 'audioanalysis.v1.AudioAnalysis' }, 'auris gRPC streaming serving');
  const closeRest = server.close.bind(server);
  server.close = async () => {
    await grpcServer.close();
    await closeRest();
  };
  return grpcServer;
}
