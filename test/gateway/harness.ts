import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp, type GatewayDeps } from '../../src/gateway/app.js';
import { GatewayAdminClient } from '../../src/gateway/admin-client.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

export const ADMIN_KEY = 'test-admin-key-123';

/** Real S3 (rclone) plus a fresh gateway data dir; one per test file. */
export async function startStore(): Promise<{ services: TestServices; store: ObjectStore }> {
  const services = await startTestServices({ s3: true });
  const store = createObjectStore(services.s3);
  await store.ensureBucket();
  return { services, store };
}

export interface RunningGateway {
  app: FastifyInstance;
  url: string;
  admin: GatewayAdminClient;
  dataDir: string;
  close(): Promise<void>;
}

/** A gateway app listening on a free loopback port. */
export async function startGateway(
  store: ObjectStore,
  baseDir: string,
  modelServerUrl: string,
  extra: Partial<GatewayDeps> = {},
): Promise<RunningGateway> {
  const dataDir = extra.dataDir ?? fs.mkdtempSync(path.join(baseDir, 'gw-'));
  const app = await buildApp({
    store,
    dataDir,
    modelServerUrl,
    adminKey: ADMIN_KEY,
    upstream: { retryBaseMs: 5, retryMaxMs: 50 },
    ...extra,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return { app, url, dataDir, admin: new GatewayAdminClient(url, ADMIN_KEY), close: () => app.close() };
}

let counter = 0;
/** A unique rollout registration for this test process. */
export function rolloutInput(overrides: Record<string, unknown> = {}) {
  counter++;
  return {
    runId: 'run-gw',
    iteration: 1,
    rolloutId: `r${process.pid}-${counter}`,
    attempt: 0,
    mode: 'train' as const,
    policyModel: 'policy-a',
    promptOverlay: null,
    ...overrides,
  };
}
