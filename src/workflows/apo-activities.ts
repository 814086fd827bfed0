import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { ProposeOverlaysInput } from '../activities/prompt-proposals.js';
import type { LaunchRolloutsInput } from '../activities/rollouts.js';
import type { RunConfig } from '../config/run.js';
import { CPU_QUEUE, longOptions, quickOptions, retryPolicy, type Cpu } from './proxies.js';
import type { LaunchedRollout } from '../contracts/rollout-outcome.js';
import type { PolicyRef } from '../contracts/policy.js';

/** One prompt version run on a list of tasks: rollout ids are unique per (iteration, prefix, version, task). */
export interface VersionRun {
  config: RunConfig;
  iteration: number;
  /** Only whether the rollouts train; which tasks and how calls sample are said by taskSet and sampling. */
  mode: 'train' | 'eval';
  taskSet: string | null;
  sampling: { temperature: number } | null;
  label: string;
  version: number;
  taskIds: string[];
  idPrefix: string;
}

/**
 * Activities of a promptOptimization run, with Web UI summaries per call. Rollout steps are bounded by heartbeats
 * like training's; proposing may call an external optimiser, so it gets retries with backoff for an endpoint down.
 */
export function apoActivities(config: RunConfig, policy: PolicyRef) {
  const long = longOptions(config);
  const propose: ActivityOptions = { taskQueue: CPU_QUEUE, startToCloseTimeout: '10 minutes', retry: retryPolicy(8) };
  const q = proxyActivities<Cpu>(quickOptions);
  const l = proxyActivities<Cpu>(long);
  const p = proxyActivities<Cpu>(propose);

  const launch = (run: VersionRun, summary: string): Promise<{ results: LaunchedRollout[] }> => {
    const input: LaunchRolloutsInput = {
      config: run.config,
      iteration: run.iteration,
      mode: run.mode,
      label: run.label,
      policy,
      taskSet: run.taskSet,
      sampling: run.sampling,
      tasks: run.taskIds.map((taskId, i) => ({
        taskId,
        groupId: `v${run.version}-t${i}`,
        rolloutIds: [`${run.idPrefix}-v${run.version}-t${i}`],
      })),
      promptOverlay: run.version > 0 ? { version: run.version } : null,
    };
    return l.launchRollouts.executeWithOptions({ ...long, summary }, [input]);
  };

  return {
    splitApoTasks: q.splitApoTasks,
    storeSeedOverlay: q.storeSeedOverlay,
    scoredRollouts: q.scoredRollouts,
    promoteBestPrompt: q.promoteBestPrompt,
    listTaskIds: q.listTaskIds,
    launch,
    computeRewards: l.computeRewards,
    proposeOverlays: (input: ProposeOverlaysInput, summary: string) =>
      p.proposeOverlays.executeWithOptions({ ...propose, summary }, [input]),
    /** Run a version greedily on tasks and score it: the mean reward over the rollouts that were scored. */
    async score(run: VersionRun, summary: string): Promise<number> {
      const { results } = await launch(run, summary);
      const rewards = await l.computeRewards.executeWithOptions({ ...long, summary: `rewards: ${summary}` }, [
        {
          config: run.config,
          iteration: run.iteration,
          mode: run.mode,
          label: run.label,
          taskSet: run.taskSet,
          results,
        },
      ]);
      return rewards.meanReward;
    },
  };
}
