import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { ObjectStore } from '../storage/object-store.js';
import { putTaskSet } from '../storage/task-sets.js';
import { claimDeployAlias } from './deploy-alias.js';
import { consumedTaskFiles, readLineage } from './lineage-record.js';
import { basePolicy, lineagePolicy, resolveStartPolicy } from './start-policy.js';
import { takeTasks } from './task-intake.js';

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

/**
 * Resolve model.startFrom (or the lineage's current policy) and the incumbent; for a trainPrefix run, take the task
 * files the lineage has not trained on plus the replay share and pin them. Writes only the content-addressed pin and
 * the deploy alias's claim, so a retry decides the same unless a task file arrived in between (then it takes it too).
 * Throws StartPolicyError, TaskSetError, or DeployAliasError (another lineage owns the alias).
 */
export async function planRun(store: ObjectStore, config: RunConfig): Promise<RunPlan> {
  if (config.deploy && config.lineage) await claimDeployAlias(store, config.deploy.alias, config.lineage);
  const startFrom = await resolveStartPolicy(store, config);
  const incumbent = config.lineage
    ? await lineagePolicy(store, config, config.lineage)
    : config.model.startFrom
      ? startFrom
      : basePolicy(config);
  const prefix = config.tasks.trainPrefix;
  if (!prefix || config.tasks.trainSet) return { config, startFrom, incumbent, intake: null, noNewTasks: false };
  const consumed = config.lineage ? consumedTaskFiles(await readLineage(store, config.lineage)) : new Set<string>();
  const intake = await takeTasks(store, prefix, consumed, config.tasks.replayShare, config.runId);
  if (!intake) {
    const nothing = { newTasks: [], replayTasks: [], taskFiles: [] };
    return { config, startFrom, incumbent, intake: nothing, noNewTasks: true };
  }
  const { sha256 } = await putTaskSet(store, intake.tasks);
  return {
    config: { ...config, tasks: { ...config.tasks, trainSet: sha256 } },
    startFrom,
    incumbent,
    intake: { newTasks: intake.newTasks, replayTasks: intake.replayTasks, taskFiles: intake.newFiles },
    noNewTasks: false,
  };
}
