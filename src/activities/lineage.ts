import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { LineageRun } from '../contracts/lineage.js';
import { TaskSetError } from '../contracts/task.js';
import { DeployAliasError } from '../lineage/deploy-alias.js';
import { recordLineageRun } from '../lineage/lineage-record.js';
import { planRun, type RunPlan } from '../lineage/plan-run.js';
import { StartPolicyError } from '../lineage/start-policy.js';
import type { ActivityDeps } from './deps.js';
import { failingAs, type FailureRule } from './failure-rules.js';

const rules: FailureRule[] = [
  [StartPolicyError, FailureType.CheckpointNotFound],
  [TaskSetError, FailureType.InvalidTaskSet],
  [DeployAliasError, FailureType.InvalidConfig],
];

export const createLineageActivities = (deps: Pick<ActivityDeps, 'store'>) => ({
  /** Where the run starts and what it must beat (src/lineage/plan-run.ts); a retry decides the same. */
  planRun: (input: { config: RunConfig }): Promise<RunPlan> =>
    failingAs(rules, () => planRun(deps.store, input.config)),

  /** The run ended: append it to its lineage's history (once), so the next run treats its task files as old. */
  async recordLineageRun(input: { lineage: string; run: Omit<LineageRun, 'at'> }): Promise<void> {
    await recordLineageRun(deps.store, input.lineage, { ...input.run, at: new Date().toISOString() });
  },
});
