import { apoOf, ApoConfigError, promoteBestPrompt, splitApoTasks, storeSeedOverlay } from '../apo/prompt-promotion.js';
import { readRolloutRewards } from '../apo/rollout-rewards.js';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import { TaskSetError } from '../contracts/task.js';
import { createPromptOverlayStore } from '../storage/prompt-overlays.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';

const rules: FailureRule[] = [
  [ApoConfigError, FailureType.InvalidConfig],
  [TaskSetError, FailureType.InvalidTaskSet],
];

/** The prompt-optimisation steps of src/apo/prompt-promotion.ts, over the run's prompt overlay store. */
export const createPromptOptimizationActivities = (deps: Pick<ActivityDeps, 'store' | 'taskSets'>) => {
  const overlays = createPromptOverlayStore(deps.store);
  return {
    /** The APO split of tasks.trainFile: the last apo.validationTasks validate; fails if nothing is left to train on. */
    splitApoTasks: (input: { config: RunConfig }) =>
      failingAs(rules, async () => {
        const apo = apoOf(input.config);
        const { tasks } = await deps.taskSets.load(input.config.tasks.trainSet);
        return splitApoTasks(
          tasks.map((t) => t.id),
          apo,
        );
      }),

    /** The version the beam starts from: the seed overlay stored write-once as version 1, or 0 (the agent's own). */
    storeSeedOverlay: (input: { config: RunConfig }) =>
      failingAs(rules, () => storeSeedOverlay(overlays, input.config)),

    /** Per-rollout rewards of one rewards file (infra failures left out), so proposers see which rollouts worked. */
    scoredRollouts: (input: { config: RunConfig; iteration: number; mode: 'train' | 'eval'; label: string }) =>
      readRolloutRewards(deps.store, input),

    /** `version` becomes the active prompt only if it beats the current one by apo.promoteMargin; idempotent. */
    promoteBestPrompt: (input: { config: RunConfig; version: number; score: number; baselineScore: number }) =>
      failingAs(rules, () => promoteBestPrompt(overlays, input)),
  };
};
