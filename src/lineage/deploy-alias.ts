import { deployAliasSchema, type DeployAlias } from '../contracts/lineage.js';
import type { PolicyRef } from '../contracts/policy.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';

/** Point the stable serving name at `policy` (keeping the entry it replaces); the same policy again is a no-op. */
export async function moveDeployAlias(store: Pick<ObjectStore, 'getJsonOrNull' | 'putJson'>, alias: string, lineage: string, policy: PolicyRef, runId: string): Promise<DeployAlias> {
  const old = await store.getJsonOrNull(keys.deployAlias(alias), deployAliasSchema);
  if (old && old.current.policy.sha256 === policy.sha256 && old.current.runId === runId) return old;
  const next: DeployAlias = { alias, lineage, current: { policy, runId, at: new Date().toISOString() }, history: old ? [...old.history, old.current] : [] };
  await store.putJson(keys.deployAlias(alias), next, deployAliasSchema);
  return next;
}

/** Every stored deploy alias (what a model server must serve after a restart); an unreadable record is reported, not skipped silently. */
export async function listDeployAliases(store: Pick<ObjectStore, 'list' | 'getJson'>): Promise<DeployAlias[]> {
  const out: DeployAlias[] = [];
  for await (const { key } of store.list(keys.deployAliases())) if (key.endsWith('.json')) out.push(await store.getJson(key, deployAliasSchema));
  return out;
}
