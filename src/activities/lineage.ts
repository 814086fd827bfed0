import { ApplicationFailure } from '@temporalio/activity';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { LineageRun } from '../contracts/lineage.js';
import type { PolicyRef } from '../contracts/policy.js';
import { TaskSetError } from '../contracts/task.js';
import { claimDeployAlias, DeployAliasError } from '../lineage/deploy-alias.js';
import { consumedTaskFiles, readLineage, recordLineageRun } from '../lineage/lineage-record.js';
import { basePolicy, lineagePolicy, resolveStartPolicy, StartPolicyError } from '../lineage/start-policy.js';
import { takeTasks } from '../lineage/task-intake.js';
import { putTaskSet } from '../storage/task-sets.js';
import type { ActivityDeps } from './deps.js';

/** Where a run starts and what it must beat, decided once when it starts (kept in its history). */
export interface RunPlan {
  /** The config with tasks.trainSet pinned (for a trainPrefix run: the new tasks plus the replayed ones). */
  config: RunConfig;
  startFrom: PolicyRef;
  /** What a candidate must beat: the lineage's current policy, else the start policy. */
  incumbent: PolicyRef;
  /** For a trainPrefix run: what it took from the source; noNewTasks when there was nothing new. */
  intake: { newTasks: string[]; replayTasks: string[]; taskFiles: string[] } | null;
  noNewTasks: boolean;
}

const failure = (type: string, err: Error) =>
  ApplicationFailure.create({ type, message: err.message, nonRetryable: true });

export const createLineageActivities = (deps: Pick<ActivityDeps, 'store'>) => ({
  /**
   * Resolve model.startFrom (or the lineage's current policy) and the incumbent; for a trainPrefix run, take the task
   * files the lineage has not trained on plus the replay share and pin them. Writes only the content-addressed pin and
   * the deploy alias's claim (refused when another lineage owns it), so a retry decides the same unless a task file
   * arrived in between (then the retry takes it too).
   */
  async planRun(input: { config: RunConfig }): Promise<RunPlan> {
    const { config } = input;
    try {
      if (config.deploy && config.lineage) await claimDeployAlias(deps.store, config.deploy.alias, config.lineage);
      const startFrom = await resolveStartPolicy(deps.store, config);
      const incumbent = config.lineage
        ? await lineagePolicy(deps.store, config, config.lineage)
        : config.model.startFrom
          ? startFrom
          : basePolicy(config);
      const prefix = config.tasks.trainPrefix;
      if (!prefix || config.tasks.trainSet) return { config, startFrom, incumbent, intake: null, noNewTasks: false };
      const consumed = config.lineage
        ? consumedTaskFiles(await readLineage(deps.store, config.lineage))
        : new Set<string>();
      const intake = await takeTasks(deps.store, prefix, consumed, config.tasks.replayShare, config.runId);
      if (!intake)
        return {
          config,
          startFrom,
          incumbent,
          intake: { newTasks: [], replayTasks: [], taskFiles: [] },
          noNewTasks: true,
        };
      const { sha256 } = await putTaskSet(deps.store, intake.tasks);
      return {
        config: { ...config, tasks: { ...config.tasks, trainSet: sha256 } },
        startFrom,
        incumbent,
        intake: { newTasks: intake.newTasks, replayTasks: intake.replayTasks, taskFiles: intake.newFiles },
        noNewTasks: false,
      };
    } catch (err) {
      if (err instanceof StartPolicyError) throw failure(FailureType.CheckpointNotFound, err);
      if (err instanceof TaskSetError) throw failure(FailureType.InvalidTaskSet, err);
      if (err instanceof DeployAliasError) throw failure(FailureType.InvalidConfig, err);
      throw err;
    }
  },

  /** The run ended: append it to its lineage's history (once), so the next run treats its task files as old. */
  async recordLineageRun(input: { lineage: string; run: Omit<LineageRun, 'at'> }): Promise<void> {
    await recordLineageRun(deps.store, input.lineage, { ...input.run, at: new Date().toISOString() });
  },
});
