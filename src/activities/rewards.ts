import { Context } from '@temporalio/activity';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../contracts/task.js';
import { scoreRollouts, type ComputeRewardsInput, type RewardsSummary } from '../rewards/score-rollouts.js';
import type { ActivityDeps } from './deps.js';
import { failingAs } from './failure-rules.js';

export type { ComputeRewardsInput, RewardsSummary };

export const createRewardActivities = (deps: ActivityDeps) => ({
  /** Score the rollouts into one rewards file (src/rewards/score-rollouts.ts); a retry reuses the stored file. */
  async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
    const ctx = Context.current();
    const opts = { signal: ctx.cancellationSignal, onProgress: (p: object) => ctx.heartbeat(p) };
    return failingAs([[TaskSetError, FailureType.InvalidTaskSet]], () =>
      scoreRollouts(input, { ...deps, env: process.env }, opts),
    );
  },
});
