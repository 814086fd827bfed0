import type { AddressInfo } from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import type { Span } from '../../src/contracts/span.js';
import { buildApp, type GatewayDeps } from '../../src/gateway/app.js';
import { GatewayAdminClient } from '../../src/gateway/admin-client.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { readSpans } from '../../src/storage/spans.js';
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

/**
 * One agent call in a fresh rollout: register `input`, POST `body` to `route` under its token (`headers(token)` puts
 * the token where the agent's SDK would), close the rollout and read back its spans.
 */
export async function callInRollout(
  gw: RunningGateway,
  store: ObjectStore,
  input: ReturnType<typeof rolloutInput>,
  route: string,
  headers: (token: string) => Record<string, string>,
  body: unknown,
) {
  const { token } = await gw.admin.register(input);
  const res = await request(`${gw.url}/r/${token}${route}`, {
    method: 'POST',
    headers: headers(token),
    body: JSON.stringify(body),
  });
  const text = await res.body.text();
  await gw.admin.close(token);
  const spans: Span[] = [];
  for await (const s of readSpans(store, input)) spans.push(s);
  return { status: res.statusCode, contentType: String(res.headers['content-type']), text, spans };
}
