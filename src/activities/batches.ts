import type { RunConfig } from '../config/run.js';
import { writeIterationBatch, type IterationBatch } from '../batches/iteration-batch.js';
import type { ActivityDeps } from './deps.js';

export const createBatchActivities = (deps: Pick<ActivityDeps, 'store'>) => ({
  /**
   * Rewarded rollouts → samples.safetensors + manifest.json for the iteration (src/batches/iteration-batch.ts); with
   * `role`, the batch of that trained role's calls only (a team training an adapter per role).
   */
  buildBatch: (input: {
    config: RunConfig;
    iteration: number;
    rewardsKey: string;
    role?: string;
  }): Promise<IterationBatch> =>
    writeIterationBatch(deps.store, input.config, input.iteration, input.rewardsKey, input.role),
});
