import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { loadEnv } from '../../src/config/env.js';
import type { PolicyRef } from '../../src/contracts/policy.js';
import { Upstream } from '../../src/gateway/upstream/model-client.js';
import { buildAdapterLoader } from '../../src/serving/adapter-loader.js';
import { checkpointUri } from '../../src/serving/adapter-uri.js';
import { createModelServerClient } from '../../src/serving/model-server-client.js';
import { CheckpointNotFoundError, servePolicy, type ServingDeps } from '../../src/serving/serve-policy.js';
import { createObjectStore, type ObjectStore } from '../../src/storage/object-store.js';
import { MODEL_ADMIN_KEY, startModelServer } from '../gateway/model-server.js';
import { makeCheckpoints } from '../helpers/lora-adapters.js';
import { startTestServices, type TestServices } from '../helpers/services.js';

const root = path.resolve(import.meta.dirname, '../..');

// Real S3 (rclone), the real Python model server with an admin key, real LoRA checkpoints, the real serving code: a
// worker with VOLT_ADAPTER_SOURCE=store sends only the checkpoint's URI, and the loader beside the model server
// fetches it into a directory the worker never writes (no shared disk between them, as on a cluster).
void describe('adapter loader: adapters reach the model server through the object store', { timeout: 900_000 }, () => {
  let services: TestServices;
  let store: ObjectStore;
  let model: Awaited<ReturnType<typeof startModelServer>>;
  let loader: FastifyInstance;
  let loaderUrl: string;
  let adapter: PolicyRef;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'volt-adapter-loader-'));
  const workerDir = path.join(tmp, 'worker');
  const loaderDir = path.join(tmp, 'model-server-adapters');
  let bucket: string;
  let worker: ServingDeps;

  before(async () => {
    services = await startTestServices({ temporal: false, s3: true });
    const env = loadEnv({ ...services.env, VOLT_DATA_DIR: workerDir }, root);
    bucket = env.VOLT_S3_BUCKET;
    store = createObjectStore(env);
    await store.ensureBucket();
    model = await startModelServer({ readyMs: 600_000 });
    [adapter] = (await makeCheckpoints(store, path.join(tmp, 'made'), 1)) as [PolicyRef];
    loader = await buildAdapterLoader({
      upstream: model.url,
      store,
      bucket,
      dir: loaderDir,
      adminKey: MODEL_ADMIN_KEY,
    });
    loaderUrl = await loader.listen({ host: '127.0.0.1', port: 0 });
    worker = {
      server: createModelServerClient({ url: loaderUrl, adminKey: MODEL_ADMIN_KEY }),
      store,
      dataDir: workerDir,
      adapterSource: 'store',
      bucket,
    };
  });
  after(async () => {
    await loader?.close();
    await model?.stop();
    await services?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  void it('serves a checkpoint named by its URI; the worker downloads nothing', async () => {
    await servePolicy(worker, adapter, 'team-a-best');
    assert.ok(existsSync(path.join(loaderDir, adapter.sha256 as string, 'adapter_config.json')));
    assert.equal(existsSync(path.join(workerDir, 'adapters')), false, 'the worker unpacked nothing');
    assert.ok((await worker.server.listModels()).includes('team-a-best'), 'listed through the loader');
    // The model server itself answers with the adapter: a real completion under the loaded name.
    const res = await fetch(`${model.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'team-a-best', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4 }),
    });
    assert.equal(res.status, 200, await res.clone().text());
    // Loading again (a retry, or a second alias) reuses the unpacked checkpoint.
    await servePolicy(worker, adapter, 'team-a-current');
    assert.ok((await worker.server.listModels()).includes('team-a-current'));
    await worker.server.unloadAdapter('team-a-current');
    assert.equal((await worker.server.listModels()).includes('team-a-current'), false);
  });

  void it('a checkpoint missing from the store is CheckpointNotFoundError, final', async () => {
    const missing: PolicyRef = { ...adapter, sha256: 'f'.repeat(64), checkpointKey: `checkpoints/${'f'.repeat(64)}/` };
    await assert.rejects(servePolicy(worker, missing, 'nope'), CheckpointNotFoundError);
  });

  void it('refuses callers without the admin key and lora_paths that are not checkpoints of its bucket', async () => {
    const post = (body: unknown, key?: string) =>
      fetch(`${loaderUrl}/v1/load_lora_adapter`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify(body),
      });
    const good = { lora_name: 'x', lora_path: checkpointUri(bucket, adapter.sha256 as string) };
    assert.equal((await post(good)).status, 401);
    assert.equal((await post(good, 'wrong-key-123')).status, 401);
    assert.equal((await fetch(`${loaderUrl}/v1/models`)).status, 401);
    for (const lora_path of [
      path.join(workerDir, 'adapters', adapter.sha256 as string),
      '/etc',
      `s3://other-bucket/checkpoints/${adapter.sha256}/`,
    ]) {
      const res = await post({ lora_name: 'x', lora_path }, MODEL_ADMIN_KEY);
      assert.equal(res.status, 400);
      assert.match(((await res.json()) as { error: { message: string } }).error.message, /^lora_path: expected s3:/);
    }
    const res = await post({ lora_name: 'x' }, MODEL_ADMIN_KEY);
    assert.equal(res.status, 400);
    assert.match(((await res.json()) as { error: { message: string } }).error.message, /lora_path/);
  });
});

// FAKE upstream (vLLM started with --api-key cannot run here): it records the headers of what the gateway sends.
void describe('gateway upstream: VOLT_MODEL_SERVER_API_KEY', () => {
  void it('is sent as a bearer with every call, and nothing when unset', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    const cancel = { signal: new AbortController().signal, gone: false, onGone: () => () => undefined };
    try {
      for (const apiKey of ['vllm-api-key-1', undefined]) {
        const up = new Upstream(url, { apiKey });
        await up.postBuffered('/chat/completions', '{}', cancel);
        await (await up.post('/chat/completions', '{}', cancel)).body.text();
        await up.close();
      }
    } finally {
      server.close();
    }
    assert.deepEqual(
      seen.map((h) => h.authorization),
      ['Bearer vllm-api-key-1', 'Bearer vllm-api-key-1', undefined, undefined],
    );
  });
});
