import type { RunConfig } from '../config/run.js';
import { writeBatch } from '../batches/batch-io.js';
import type { ScoredRollout } from '../batches/groups.js';
import { keys } from '../storage/keys.js';
import type { ActivityDeps } from './deps.js';
import { rewardsFileSchema } from '../contracts/rewards.js';
import { rolloutOutcomeRecordSchema } from '../contracts/rollout-outcome.js';

export const createBatchActivities = (deps: ActivityDeps) => ({
  /** Rewarded rollouts → samples.safetensors + manifest.json for the iteration (deterministic, so a re-run rewrites the same). */
  async buildBatch(input: { config: RunConfig; iteration: number; rewardsKey: string }): Promise<{
    samples: number;
    tokens: number;
    batchKey: string;
    manifestKey: string;
    dropReasons: string;
  }> {
    const { config, iteration } = input;
    const rewards = await deps.store.getJson(input.rewardsKey, rewardsFileSchema);
    const scored: ScoredRollout[] = [];
    for (const r of rewards.rollouts) {
      const record = await deps.store.getJson(
        keys.rolloutOutcome(config.runId, iteration, r.rolloutId),
        rolloutOutcomeRecordSchema,
      );
      scored.push({ result: record.final, reward: r.reward });
    }
    const written = await writeBatch(deps.store, config.runId, iteration, scored, config.batch);
    const m = written.manifest;
    const drops = {
      ...m.drops.rollouts,
      ...Object.fromEntries(Object.entries(m.drops.groups).map(([k, v]) => [`groups_${k}`, v])),
    };
    return {
      samples: m.counts.samples,
      tokens: m.tokens.prompt + m.tokens.response,
      batchKey: written.samplesKey,
      manifestKey: written.manifestKey,
      dropReasons:
        Object.entries(drops)
          .map(([k, v]) => `${k}: ${v}`)
          .join(', ') || 'none',
    };
  },
});
