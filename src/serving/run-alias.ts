import { modelAliasSchema, type AliasEntry, type ModelAlias } from '../contracts/policy.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';

/** The name the model server serves a run's promoted adapter under. */
export const bestAliasName = (runId: string) => `${runId}-best`;

/** The run's `best` alias as stored, or null before its first promotion. */
export const readRunAlias = (store: ObjectStore, runId: string): Promise<ModelAlias | null> =>
  store.getJsonOrNull(keys.modelAlias(runId, 'best'), modelAliasSchema);

/** Move the alias to `entry`, keeping the entry it replaces in its history. The base model is served under its own name. */
export async function writeAlias(store: ObjectStore, runId: string, entry: AliasEntry): Promise<ModelAlias> {
  const old = await readRunAlias(store, runId);
  const alias: ModelAlias = {
    alias: 'best',
    servedAs: entry.policy.sha256 ? bestAliasName(runId) : entry.policy.name,
    current: entry,
    history: old ? [...old.history, old.current] : [],
  };
  await store.putJson(keys.modelAlias(runId, 'best'), alias, modelAliasSchema);
  return alias;
}
