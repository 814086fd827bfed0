import { deployAliasSchema, type DeployAlias } from '../contracts/lineage.js';
import type { PolicyRef } from '../contracts/policy.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';

type AliasStore = Pick<ObjectStore, 'getJsonOrNull' | 'putJson'>;

/** A deploy alias belongs to one lineage: another lineage naming it would move production's model under it. */
export class DeployAliasError extends Error {
  override name = 'DeployAliasError';
}

function assertOwner(record: DeployAlias | null, alias: string, lineage: string): void {
  if (record && record.lineage !== lineage) {
    throw new DeployAliasError(
      `deploy.alias: ${alias} already serves lineage ${record.lineage} (${keys.deployAlias(alias)}); lineage ${lineage} cannot share it: give it its own alias`,
    );
  }
}

/** Refuse an alias another lineage owns before anything is set up for `lineage` (`volt schedule create`); claims nothing. */
export async function assertDeployAliasFree(
  store: Pick<ObjectStore, 'getJsonOrNull'>,
  alias: string,
  lineage: string,
): Promise<void> {
  assertOwner(await store.getJsonOrNull(keys.deployAlias(alias), deployAliasSchema), alias, lineage);
}

/**
 * Claim the alias for `lineage` when a run of it starts (before it trains): a record with nothing promoted yet, so a
 * second lineage naming the alias is refused at its start even before the first lineage promoted anything.
 */
export async function claimDeployAlias(store: AliasStore, alias: string, lineage: string): Promise<DeployAlias> {
  const old = await store.getJsonOrNull(keys.deployAlias(alias), deployAliasSchema);
  assertOwner(old, alias, lineage);
  if (old) return old;
  const claimed: DeployAlias = { alias, lineage, current: null, history: [] };
  await store.putJson(keys.deployAlias(alias), claimed, deployAliasSchema);
  return claimed;
}

/** Point the stable serving name at `policy` (keeping the entry it replaces); the same policy again is a no-op. */
export async function moveDeployAlias(
  store: AliasStore,
  alias: string,
  lineage: string,
  policy: PolicyRef,
  runId: string,
): Promise<DeployAlias> {
  const old = await store.getJsonOrNull(keys.deployAlias(alias), deployAliasSchema);
  // Checked again here: two lineages that both claimed a fresh alias at the same moment must not both move it.
  assertOwner(old, alias, lineage);
  if (old?.current && old.current.policy.sha256 === policy.sha256 && old.current.runId === runId) return old;
  const history = old ? (old.current ? [...old.history, old.current] : old.history) : [];
  const next: DeployAlias = { alias, lineage, current: { policy, runId, at: new Date().toISOString() }, history };
  await store.putJson(keys.deployAlias(alias), next, deployAliasSchema);
  return next;
}

/** Every stored deploy alias (what a model server must serve after a restart); an unreadable record is reported, not skipped silently. */
export async function listDeployAliases(store: Pick<ObjectStore, 'list' | 'getJson'>): Promise<DeployAlias[]> {
  const out: DeployAlias[] = [];
  for await (const { key } of store.list(keys.deployAliases()))
    if (key.endsWith('.json')) out.push(await store.getJson(key, deployAliasSchema));
  return out;
}
