import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { request } from 'undici';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import type { ActivityDeps } from './deps.js';
import type { PolicyRef } from '../contracts/policy.js';
import { modelAliasSchema, type AliasEntry, type ModelAlias } from '../contracts/policy.js';
import { claimDeployAlias, DeployAliasError, listDeployAliases, moveDeployAlias } from '../lineage/deploy-alias.js';
import { setLineageCurrent } from '../lineage/lineage-record.js';

export const bestAliasName = (runId: string) => `${runId}-best`;

type ServingDeps = Pick<ActivityDeps, 'env' | 'store' | 'modelServerUrl'>;

/** Make the model server serve `policy` under `name` (vLLM's load_lora_adapter; in place, so it is idempotent). */
export async function loadAdapter(
  deps: Pick<ActivityDeps, 'env' | 'store' | 'modelServerUrl'>,
  policy: PolicyRef,
  name = policy.name,
): Promise<void> {
  if (!policy.sha256) return; // the base model is always served
  const dir = path.join(deps.env.dataDir, 'adapters', policy.sha256);
  if (!existsSync(path.join(dir, 'adapter_config.json'))) {
    try {
      await deps.store.getCheckpoint(policy.sha256, dir);
    } catch (err) {
      throw ApplicationFailure.create({
        type: FailureType.CheckpointNotFound,
        message: `checkpoint ${policy.sha256}: ${(err as Error).message}`,
        nonRetryable: true,
      });
    }
  }
  const res = await request(`${deps.modelServerUrl.replace(/\/+$/, '')}/v1/load_lora_adapter`, {
    method: 'POST',
    // The control endpoints need the model server's admin key (agents never have it).
    headers: { 'content-type': 'application/json', authorization: `Bearer ${deps.env.VOLT_MODEL_SERVER_ADMIN_KEY}` },
    body: JSON.stringify({ lora_name: name, lora_path: dir, load_inplace: true }),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300)
    throw new Error(`model server load_lora_adapter ${name}: ${res.statusCode} ${text.slice(0, 300)}`);
}

/**
 * Before a rollout attempt that follows an infra failure: the model server may be restarting (and has then lost its
 * adapters), so wait until it answers and serve the policy again, retrying for up to `withinMs` before throwing.
 */
export async function serveAgain(
  deps: Pick<ActivityDeps, 'env' | 'store' | 'modelServerUrl'>,
  policy: PolicyRef,
  signal: AbortSignal,
  withinMs = 120_000,
): Promise<void> {
  for (let waitMs = 500, t0 = Date.now(); ; waitMs = Math.min(waitMs * 2, 5_000)) {
    try {
      if (policy.sha256) return await loadAdapter(deps, policy);
      const res = await request(`${deps.modelServerUrl.replace(/\/+$/, '')}/v1/models`, { signal });
      await res.body.dump();
      if (res.statusCode < 300) return;
      throw new Error(`model server /v1/models: ${res.statusCode}`);
    } catch (err) {
      if (err instanceof ApplicationFailure || Date.now() - t0 + waitMs > withinMs) throw err;
      await sleep(waitMs, undefined, { signal });
    }
  }
}

/** Serving activities heartbeat (their proxy has a heartbeat timeout), so a worker killed mid-promotion is noticed fast. */
async function heartbeating<T>(fn: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const ticker = setInterval(() => ctx.heartbeat(), 2_000);
  try {
    return await fn();
  } finally {
    clearInterval(ticker);
  }
}

/** Stop serving adapter `name` (vLLM's unload_lora_adapter); one that is not loaded is already unloaded. */
export async function unloadAdapter(deps: Pick<ActivityDeps, 'modelServerUrl'>, name: string): Promise<void> {
  const res = await request(`${deps.modelServerUrl.replace(/\/+$/, '')}/v1/unload_lora_adapter`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ lora_name: name }),
  });
  const text = await res.body.text();
  if (res.statusCode >= 300 && res.statusCode !== 404)
    throw new Error(`model server unload_lora_adapter ${name}: ${res.statusCode} ${text.slice(0, 300)}`);
}

/** Move the alias to `entry`, keeping the entry it replaces in its history. The base model is served under its own name. */
export async function writeAlias(store: ObjectStore, runId: string, entry: AliasEntry): Promise<ModelAlias> {
  const key = keys.modelAlias(runId, 'best');
  const old = await store.getJsonOrNull(key, modelAliasSchema);
  const alias: ModelAlias = {
    alias: 'best',
    servedAs: entry.policy.sha256 ? bestAliasName(runId) : entry.policy.name,
    current: entry,
    history: old ? [...old.history, old.current] : [],
  };
  await store.putJson(key, alias, modelAliasSchema);
  return alias;
}

/**
 * A lineage's promotion or rollback: its record's current policy moves, then its deploy alias (record first, so a
 * restarted model server loads what was decided), then the model server repoints the alias in one step.
 */
async function moveLineage(deps: ServingDeps, config: RunConfig, policy: PolicyRef, score: number): Promise<void> {
  if (!config.lineage) return;
  const { deploy, lineage } = config;
  try {
    // Another lineage's alias is refused before anything moves (planRun claimed it; this catches a simultaneous claim).
    if (deploy) await claimDeployAlias(deps.store, deploy.alias, lineage);
    await setLineageCurrent(deps.store, lineage, { policy, score, runId: config.runId });
    if (deploy) await moveDeployAlias(deps.store, deploy.alias, lineage, policy, config.runId);
  } catch (err) {
    if (err instanceof DeployAliasError)
      throw ApplicationFailure.create({ type: FailureType.InvalidConfig, message: err.message, nonRetryable: true });
    throw err;
  }
  if (deploy) await loadAdapter(deps, policy, deploy.alias);
}

/** Load every stored deploy alias into the model server (`volt serve` at start): a restarted server serves them again. */
export async function syncDeployAliases(
  deps: Pick<ActivityDeps, 'env' | 'store' | 'modelServerUrl'>,
): Promise<string[]> {
  const aliases = await listDeployAliases(deps.store);
  const served = aliases.flatMap((a) =>
    a.current?.policy.sha256 ? [{ alias: a.alias, policy: a.current.policy }] : [],
  );
  for (const a of served) await loadAdapter(deps, a.policy, a.alias);
  return served.map((a) => `${a.alias} → ${a.policy.name}`);
}

export const createServingActivities = (deps: ServingDeps) => ({
  /** Load the policy rollouts will sample from into the model server. */
  async servePolicy(input: { policy: PolicyRef }): Promise<void> {
    await heartbeating(() => loadAdapter(deps, input.policy));
  },

  /** Promotion: the `best` alias in the object store moves to the candidate and the server serves it as `<run>-best`. */
  promoteCheckpoint: (input: {
    config: RunConfig;
    iteration: number;
    policy: PolicyRef;
    score: number;
  }): Promise<void> =>
    heartbeating(async () => {
      const { config, iteration, policy, score } = input;
      const key = keys.modelAlias(config.runId, 'best');
      const existing = await deps.store.getJsonOrNull(key, modelAliasSchema);
      // Idempotent: a retry after the alias was written only reloads the adapter.
      if (existing?.current.policy.sha256 !== policy.sha256 || existing.current.iteration !== iteration) {
        await writeAlias(deps.store, config.runId, { policy, score, iteration, at: new Date().toISOString() });
      }
      await loadAdapter(deps, policy, bestAliasName(config.runId));
      await moveLineage(deps, config, policy, score);
    }),

  /**
   * The serving side of the run's `rollback` update: the alias moves to `to` (a promotion, or the base model, which
   * is then served under its own name and `<run>-best` is unloaded). Idempotent like promotion.
   */
  rollbackCheckpoint: (input: {
    config: RunConfig;
    to: { policy: PolicyRef; score: number; iteration: number | null };
  }): Promise<void> =>
    heartbeating(async () => {
      const { config, to } = input;
      const existing = await deps.store.getJsonOrNull(keys.modelAlias(config.runId, 'best'), modelAliasSchema);
      if (existing?.current.policy.sha256 !== to.policy.sha256 || existing.current.iteration !== to.iteration) {
        await writeAlias(deps.store, config.runId, { ...to, at: new Date().toISOString() });
      }
      if (to.policy.sha256) await loadAdapter(deps, to.policy, bestAliasName(config.runId));
      else await unloadAdapter(deps, bestAliasName(config.runId));
      // The run's validator refuses a rollback to the bare base model when a deploy alias would have nothing to serve.
      await moveLineage(deps, config, to.policy, to.score);
    }),
});
