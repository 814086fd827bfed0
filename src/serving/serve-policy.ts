import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PolicyRef } from '../contracts/policy.js';
import { adaptersOf } from '../contracts/policy-set.js';
import type { VoltEnv } from '../config/env.js';
import type { ObjectStore } from '../storage/object-store.js';
import { checkpointUri } from './adapter-uri.js';
import {
  CHECKPOINT_NOT_FOUND,
  ModelServerError,
  createModelServerClient,
  type ModelServerClient,
} from './model-server-client.js';

/** What serving a policy needs: the model server, the checkpoints, and where adapters are unpacked for the server. */
export interface ServingDeps {
  server: ModelServerClient;
  store: ObjectStore;
  /** Adapters are unpacked under `<dataDir>/adapters/<sha256>` (the server reads them at that path). */
  dataDir: string;
  /**
   * 'local' (default): unpack here and send the path, for a model server on this machine or a shared disk. 'store':
   * send the checkpoint's object-store URI; the model server's adapter loader fetches it (VOLT_ADAPTER_SOURCE).
   */
  adapterSource?: 'local' | 'store';
  /** The bucket of the store's URIs ('store' source). */
  bucket?: string;
}

/**
 * The serving deps of a worker or CLI process, from its environment: adapter source and bucket, and the model server —
 * the client the process already holds, or one built from a URL (default: the control URL, else the serving URL).
 */
export function servingDeps(
  env: Readonly<VoltEnv>,
  store: ObjectStore,
  server?: ModelServerClient | string,
): ServingDeps {
  return {
    server:
      typeof server === 'object'
        ? server
        : createModelServerClient({
            url: server ?? env.VOLT_MODEL_SERVER_CONTROL_URL ?? env.VOLT_MODEL_SERVER_URL,
            adminKey: env.VOLT_MODEL_SERVER_ADMIN_KEY,
          }),
    store,
    dataDir: env.dataDir,
    adapterSource: env.VOLT_ADAPTER_SOURCE,
    bucket: env.VOLT_S3_BUCKET,
  };
}

/** The policy's checkpoint is not in the object store: no retry can serve it. */
export class CheckpointNotFoundError extends Error {
  constructor(sha256: string, cause: unknown) {
    super(`checkpoint ${sha256}: ${(cause as Error).message}`, { cause });
    this.name = 'CheckpointNotFoundError';
  }
}

/**
 * Make the model server serve `policy` under `name`, downloading its adapter first; the base model is always served.
 * A team policy's role adapters are served too: under their own names, or (for an alias `name`) as `<name>-<role>`.
 */
export async function servePolicy(deps: ServingDeps, policy: PolicyRef, name = policy.name): Promise<void> {
  await serveAdapter(deps, policy, name);
  for (const [role, p] of Object.entries(policy.roles ?? {}))
    if (p.name !== policy.name || name !== policy.name)
      await serveAdapter(deps, p, name === policy.name ? p.name : `${name}-${role}`);
}

async function serveAdapter(deps: ServingDeps, policy: PolicyRef, name: string): Promise<void> {
  if (!policy.sha256) return;
  if (deps.adapterSource === 'store') {
    if (!deps.bucket) throw new Error('servePolicy: the store source needs the bucket');
    try {
      return await deps.server.loadAdapter(name, checkpointUri(deps.bucket, policy.sha256));
    } catch (err) {
      // The loader looked in the store first: a missing checkpoint is as final as a local miss.
      if (err instanceof ModelServerError && err.status === 404 && err.message.includes(CHECKPOINT_NOT_FOUND))
        throw new CheckpointNotFoundError(policy.sha256, err);
      throw err;
    }
  }
  const dir = path.join(deps.dataDir, 'adapters', policy.sha256);
  if (!existsSync(path.join(dir, 'adapter_config.json'))) {
    try {
      await deps.store.getCheckpoint(policy.sha256, dir);
    } catch (err) {
      throw new CheckpointNotFoundError(policy.sha256, err);
    }
  }
  await deps.server.loadAdapter(name, dir);
}

/**
 * Before a rollout attempt that follows an infra failure: the model server may be restarting (and has then lost its
 * adapters), so wait until it answers and serve the policy again, retrying for up to `withinMs` before throwing.
 */
export async function serveAgain(
  deps: ServingDeps,
  policy: PolicyRef,
  signal: AbortSignal,
  withinMs = 120_000,
): Promise<void> {
  for (let waitMs = 500, t0 = Date.now(); ; waitMs = Math.min(waitMs * 2, 5_000)) {
    try {
      if (adaptersOf(policy).length > 0) return await servePolicy(deps, policy);
      if (await deps.server.ready(signal)) return;
      throw new Error(`model server ${deps.server.url}/v1/models does not answer`);
    } catch (err) {
      if (err instanceof CheckpointNotFoundError || Date.now() - t0 + waitMs > withinMs) throw err;
      await sleep(waitMs, undefined, { signal });
    }
  }
}
