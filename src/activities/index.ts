import { createBatchActivities } from './batches.js';
import { createConfigActivities } from './config.js';
import type { ActivityDeps } from './deps.js';
import { createLineageActivities } from './lineage.js';
import { createPromptOptimizationActivities } from './prompt-optimization.js';
import { createPromptProposalActivities } from './prompt-proposals.js';
import { createRewardActivities } from './rewards.js';
import { createRolloutActivities } from './rollouts.js';
import { createServingActivities } from './serving.js';
import { createUpdateActivities } from './update.js';

/** Activities of the `volt-cpu` queue: validation, rollouts, rewards, batches. */
export const createCpuActivities = (deps: ActivityDeps) => ({
  ...createConfigActivities(deps),
  ...createLineageActivities(deps),
  ...createRolloutActivities(deps),
  ...createRewardActivities(deps),
  ...createBatchActivities(deps),
  ...createPromptOptimizationActivities(deps),
  ...createPromptProposalActivities(deps),
});

/** Activities of the `volt-gpu` queue: the policy update and serving control. */
export const createGpuActivities = (deps: ActivityDeps) => ({
  ...createUpdateActivities(deps),
  ...createServingActivities(deps),
});
