import type { RunConfig } from '../config/run.js';
import { rewardsFileSchema } from '../contracts/rewards.js';
import { rewardsKeyFor } from '../rewards/score-rollouts.js';
import type { ObjectStore } from '../storage/object-store.js';

/** One scored rollout as the prompt proposers see it: which task and group, and its reward. */
export interface RolloutReward {
  rolloutId: string;
  attempt: number;
  taskId: string;
  groupId: string;
  reward: number;
}

/** Per-rollout rewards of one launch's rewards file (infra failures left out), so proposers see which rollouts worked. */
export async function readRolloutRewards(
  store: Pick<ObjectStore, 'getJson'>,
  input: { config: RunConfig; iteration: number; mode: 'train' | 'eval'; label: string },
): Promise<RolloutReward[]> {
  const file = await store.getJson(
    rewardsKeyFor(input.config, input.iteration, input.mode, input.label),
    rewardsFileSchema,
  );
  return file.rollouts.flatMap((r) =>
    r.reward === null
      ? []
      : [{ rolloutId: r.rolloutId, attempt: r.attempt, taskId: r.taskId, groupId: r.groupId, reward: r.reward }],
  );
}
