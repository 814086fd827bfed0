import type { RunConfig } from '../config/run.js';
import { lineageSchema } from '../contracts/lineage.js';
import { dirManifestSchema, modelAliasSchema, type PolicyRef } from '../contracts/policy.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import { readLineage } from './lineage-record.js';

type PolicyStore = Pick<ObjectStore, 'getJsonOrNull'>;

/** model.startFrom names something that holds no policy: the message says what was looked up. */
export class StartPolicyError extends Error {
  override name = 'StartPolicyError';
}

export const basePolicy = (config: RunConfig): PolicyRef => ({
  name: config.model.base,
  checkpointKey: null,
  sha256: null,
  iteration: null,
});

/** A lineage's current policy; the base model while nothing was promoted. */
export async function lineagePolicy(store: PolicyStore, config: RunConfig, name: string): Promise<PolicyRef> {
  return (await readLineage(store, name)).current?.policy ?? basePolicy(config);
}

/** The policy `model.startFrom` names, checked to exist; the base model when it is absent and the run has no lineage. */
export async function resolveStartPolicy(store: PolicyStore, config: RunConfig): Promise<PolicyRef> {
  const from = config.model.startFrom;
  if (!from) return config.lineage ? lineagePolicy(store, config, config.lineage) : basePolicy(config);
  if ('lineage' in from) {
    const lineage = await store.getJsonOrNull(keys.lineage(from.lineage), lineageSchema);
    if (!lineage)
      throw new StartPolicyError(`model.startFrom.lineage: no lineage ${from.lineage} (${keys.lineage(from.lineage)})`);
    return lineage.current?.policy ?? basePolicy(config);
  }
  if ('run' in from) {
    const alias = await store.getJsonOrNull(keys.modelAlias(from.run, 'best'), modelAliasSchema);
    if (!alias?.current.policy.sha256)
      throw new StartPolicyError(
        `model.startFrom.run: run ${from.run} promoted no checkpoint (${keys.modelAlias(from.run, 'best')})`,
      );
    return alias.current.policy;
  }
  const manifest = await store.getJsonOrNull(keys.checkpointManifest(from.checkpoint), dirManifestSchema);
  if (!manifest)
    throw new StartPolicyError(
      `model.startFrom.checkpoint: no complete checkpoint ${from.checkpoint} (${keys.checkpointManifest(from.checkpoint)})`,
    );
  return {
    name: `ckpt-${from.checkpoint.slice(0, 12)}`,
    checkpointKey: keys.checkpoint(from.checkpoint),
    sha256: from.checkpoint,
    iteration: null,
  };
}
