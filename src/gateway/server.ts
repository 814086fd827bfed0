import { pathToFileURL } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { loadInstallationEnv, type VoltEnv } from '../config/env.js';
import { createObjectStore } from '../storage/object-store.js';
import { buildApp } from './app.js';

/**
 * The gateway process: parse the environment, open the object store, listen on VOLT_GATEWAY_LISTEN_HOST at
 * VOLT_GATEWAY_URL's port, and close gracefully on SIGTERM/SIGINT (in-flight calls finish, spans upload, WAL closes).
 */
export async function runGateway(env: Readonly<VoltEnv> = loadInstallationEnv()): Promise<FastifyInstance> {
  const store = createObjectStore(env);
  // An unreachable store must not stop rollouts: spans wait in the WAL and upload once it is back.
  const bucketReady = await store.ensureBucket().then(
    () => null,
    (err: unknown) => err,
  );
  const url = new URL(env.VOLT_GATEWAY_URL);
  const app = await buildApp({
    store,
    dataDir: env.dataDir,
    modelServerUrl: env.VOLT_MODEL_SERVER_URL,
    upstream: { apiKey: env.VOLT_MODEL_SERVER_API_KEY },
    adminKey: env.VOLT_GATEWAY_ADMIN_KEY,
    walSync: env.VOLT_GATEWAY_WAL_SYNC,
    walSyncIntervalMs: env.VOLT_GATEWAY_WAL_SYNC_INTERVAL_MS,
    uploadDeferBytes: env.VOLT_GATEWAY_UPLOAD_DEFER_MB * 1024 * 1024,
    publicUrl: url.origin,
    replicaId: env.VOLT_GATEWAY_REPLICA_ID,
    closeWaitMs: env.VOLT_GATEWAY_CLOSE_WAIT_MS,
    // Beyond loopback, whoever reaches the port could read the metrics: they need a key there.
    metricsKey:
      env.VOLT_GATEWAY_METRICS_KEY ?? (isLoopback(env.VOLT_GATEWAY_LISTEN_HOST) ? null : env.VOLT_GATEWAY_ADMIN_KEY),
    logger: { level: process.env.LOG_LEVEL ?? 'warn' },
  });
  // Streams of a slow CPU model can run for minutes: no request timeout, but idle sockets are reaped.
  app.server.keepAliveTimeout = 65_000;
  app.server.headersTimeout = 66_000;
  app.server.requestTimeout = 0;
  if (bucketReady) app.log.warn({ err: bucketReady }, 'object store not ready; spans stay in the WAL until it is');
  await app.listen({ host: env.VOLT_GATEWAY_LISTEN_HOST, port: Number(url.port || 80) });
  console.log(
    `volt gateway listening on ${env.VOLT_GATEWAY_LISTEN_HOST}:${url.port || 80} (agents reach it at ${url.origin})`,
  );
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'closing gateway');
    app.close().then(
      () => process.exit(0),
      (err: unknown) => {
        app.log.error({ err }, 'gateway close failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
  return app;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runGateway().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
