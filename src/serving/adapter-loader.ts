import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { request } from 'undici';
import { z } from 'zod';
import { bearerCheck } from '../gateway/routes/bearer.js';
import { ObjectNotFoundError } from '../storage/errors.js';
import type { ObjectStore } from '../storage/object-store.js';
import { parseCheckpointUri } from './adapter-uri.js';
import { CHECKPOINT_NOT_FOUND } from './model-server-client.js';

export interface AdapterLoaderOptions {
  /** The model server beside it (vLLM in the same pod), e.g. http://127.0.0.1:8000. */
  upstream: string;
  store: ObjectStore;
  bucket: string;
  /** Where checkpoints are unpacked, `<dir>/<sha256>`: a volume the model server mounts at the same path. */
  dir: string;
  /** Required of every caller, and sent to the model server (vLLM's --api-key). */
  adminKey: string;
}

const loadBody = z.looseObject({ lora_name: z.string().min(1), lora_path: z.string().min(1) });

/**
 * The model server's control front on a cluster (`volt adapter-loader`), in the model server's pod: workers send it
 * their load_lora_adapter calls with a checkpoint's object-store URI as `lora_path`
 * (VOLT_ADAPTER_SOURCE=store); it fetches that checkpoint from the store into a volume the server mounts (once per
 * sha256, verified file by file against the checkpoint's manifest) and forwards the call with the local path.
 * unload_lora_adapter and /v1/models pass through. So no disk is shared between workers and the model server.
 */
export async function buildAdapterLoader(o: AdapterLoaderOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: 1 << 20 });
  const upstream = o.upstream.replace(/\/+$/, '');
  const authorized = bearerCheck([o.adminKey]);
  const fetching = new Map<string, Promise<void>>();
  const error = (reply: FastifyReply, status: number, type: string, message: string) =>
    reply.code(status).send({ error: { type, message } });
  const forward = async (reply: FastifyReply, method: 'GET' | 'POST', route: string, body?: unknown) => {
    const res = await request(`${upstream}${route}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${o.adminKey}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    return reply
      .code(res.statusCode)
      .type(String(res.headers['content-type'] ?? 'application/json'))
      .send(text);
  };
  // One download per checkpoint at a time; a finished one is reused (the directory is named by its content).
  const fetchCheckpoint = (sha256: string): Promise<void> => {
    const target = path.join(o.dir, sha256);
    if (existsSync(path.join(target, 'adapter_config.json'))) return Promise.resolve();
    let pending = fetching.get(sha256);
    if (!pending) {
      const partial = `${target}.partial`;
      pending = (async () => {
        await rm(partial, { recursive: true, force: true });
        await mkdir(partial, { recursive: true });
        await o.store.getCheckpoint(sha256, partial);
        await rm(target, { recursive: true, force: true });
        await rename(partial, target);
      })().finally(() => fetching.delete(sha256));
      fetching.set(sha256, pending);
    }
    return pending;
  };

  app.addHook('onRequest', async (req, reply) => {
    if (req.url === '/healthz') return;
    if (!authorized(req.headers.authorization))
      return error(reply, 401, 'unauthorized', 'the admin key (Authorization: Bearer ...) is required');
  });
  app.get('/healthz', () => ({ ok: true }));
  app.get('/v1/models', (_req, reply) => forward(reply, 'GET', '/v1/models'));
  app.post('/v1/unload_lora_adapter', (req, reply) => forward(reply, 'POST', '/v1/unload_lora_adapter', req.body));
  app.post('/v1/load_lora_adapter', async (req, reply) => {
    const parsed = loadBody.safeParse(req.body);
    if (!parsed.success)
      return error(
        reply,
        400,
        'invalid_request',
        `body: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    const sha256 = parseCheckpointUri(o.bucket, parsed.data.lora_path);
    if (!sha256)
      return error(
        reply,
        400,
        'invalid_request',
        `lora_path: expected s3://${o.bucket}/checkpoints/<sha256>/ (a checkpoint in this loader's bucket), got ${JSON.stringify(parsed.data.lora_path)}`,
      );
    try {
      await fetchCheckpoint(sha256);
    } catch (err) {
      if (err instanceof ObjectNotFoundError)
        return error(reply, 404, CHECKPOINT_NOT_FOUND, `checkpoint ${sha256} is not in bucket ${o.bucket}`);
      return error(reply, 502, 'store_error', `fetching checkpoint ${sha256}: ${(err as Error).message}`);
    }
    return forward(reply, 'POST', '/v1/load_lora_adapter', { ...parsed.data, lora_path: path.join(o.dir, sha256) });
  });
  return app;
}
