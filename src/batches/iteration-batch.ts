import type { RunConfig } from '../config/run.js';
import { rewardsFileSchema } from '../contracts/rewards.js';
import { rolloutOutcomeRecordSchema } from '../contracts/rollout-outcome.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import { writeBatch } from './batch-io.js';
import { batchConfigFor } from './config.js';
import { trainedRoles } from '../contracts/team.js';
import type { ScoredRollout } from './groups.js';

export interface IterationBatch {
  samples: number;
  tokens: number;
  batchKey: string;
  manifestKey: string;
  /** Why rollouts and groups were dropped, as `reason: count, ...` (or `none`). */
  dropReasons: string;
}

/**
 * An iteration's rewarded rollouts → samples.safetensors + manifest.json (deterministic: a re-run rewrites the same).
 * With `role` (a team training an adapter per role) only that role's calls become samples, in the role's own batch.
 */
export async function writeIterationBatch(
  store: ObjectStore,
  config: RunConfig,
  iteration: number,
  rewardsKey: string,
  role?: string,
): Promise<IterationBatch> {
  const rewards = await store.getJson(rewardsKey, rewardsFileSchema);
  const scored: ScoredRollout[] = [];
  for (const r of rewards.rollouts) {
    const record = await store.getJson(
      keys.rolloutOutcome(config.runId, iteration, r.rolloutId),
      rolloutOutcomeRecordSchema,
    );
    scored.push({ result: record.final, reward: r.reward, ...(r.turnRewards && { turnRewards: r.turnRewards }) });
  }
  const {
    manifest: m,
    samplesKey,
    manifestKey,
  } = await writeBatch(
    store,
    config.runId,
    iteration,
    scored,
    { ...batchConfigFor(config.batch, iteration), trainedRoles: role ? [role] : trainedRoles(config.team) },
    undefined,
    role,
  );
  const drops = {
    ...m.drops.rollouts,
    ...Object.fromEntries(Object.entries(m.drops.groups).map(([k, v]) => [`groups_${k}`, v])),
  };
  return {
    samples: m.counts.samples,
    tokens: m.tokens.prompt + m.tokens.response,
    batchKey: samplesKey,
    manifestKey,
    dropReasons:
      Object.entries(drops)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') || 'none',
  };
}
