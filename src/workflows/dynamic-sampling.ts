import type { RewardsSummary } from '../activities/rewards.js';
import type { RunConfig } from '../config/run.js';
import type { LaunchedRollout } from '../contracts/rollout-outcome.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { activitiesFor } from './proxies.js';
import type { DynamicSamplingSummary } from './types.js';

type Act = ReturnType<typeof activitiesFor>;
export interface GroupTask {
  taskId: string;
  groupId: string;
  rolloutIds: string[];
}

export interface DynamicSamplingInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
  taskSet: string | null;
  /** Every training task id in the iteration's seeded order; the iteration's own groups are its first tasks. */
  order: readonly string[];
  tasks: readonly GroupTask[];
  results: readonly LaunchedRollout[];
  rewards: RewardsSummary;
}

/** Extra groups for one round: as many as the informative rate so far suggests are needed, at most tasksPerIteration and what is left. */
export function extraGroupsFor(
  need: number,
  informative: number,
  total: number,
  tasksPerIteration: number,
  left: number,
): number {
  const estimate = informative > 0 ? Math.ceil((need * total) / informative) : tasksPerIteration;
  return Math.max(0, Math.min(estimate, tasksPerIteration, left));
}

/**
 * DAPO's dynamic sampling: while the launch has fewer informative groups (rewards that differ) than wanted, roll out
 * groups of further training tasks (the next ones in the seeded order, never a task already in this iteration) and
 * score them into the same rewards file, for at most maxExtraRounds rounds. Deterministic: workflow code.
 */
export async function sampleUntilInformative(
  act: Act,
  input: DynamicSamplingInput,
  onRound: (detail: string) => Promise<void>,
) {
  const { config, iteration, policy, taskSet } = input;
  const ds = config.rollouts.dynamicSampling!;
  const wanted = ds.minInformativeGroups ?? config.rollouts.tasksPerIteration;
  let results = [...input.results];
  let rewards = input.rewards;
  let next = input.tasks.length;
  const summary: DynamicSamplingSummary = {
    wanted,
    informativeBefore: rewards.groups?.informative ?? 0,
    informative: rewards.groups?.informative ?? 0,
    extraRounds: 0,
    extraGroups: 0,
    extraRollouts: 0,
  };
  for (let round = 1; round <= ds.maxExtraRounds; round++) {
    const groups = rewards.groups ?? { total: 0, informative: 0 };
    const need = wanted - groups.informative;
    const count =
      need > 0
        ? extraGroupsFor(
            need,
            groups.informative,
            groups.total,
            config.rollouts.tasksPerIteration,
            input.order.length - next,
          )
        : 0;
    if (count === 0) break;
    const extra = input.order.slice(next, next + count).map((taskId, k) => ({
      taskId,
      groupId: `g${next + k}`,
      rolloutIds: Array.from({ length: config.rollouts.groupSize }, (_, r) => `g${next + k}-r${r}`),
    }));
    next += count;
    await onRound(
      `dynamic sampling round ${round}: ${groups.informative}/${wanted} informative groups; ${count} more tasks × ${config.rollouts.groupSize}`,
    );
    const launched = await act.launchRollouts({
      config,
      iteration,
      mode: 'train',
      label: 'train',
      policy,
      taskSet,
      sampling: null,
      tasks: extra,
    });
    results = [...results, ...launched.results];
    rewards = await act.computeRewards({ config, iteration, mode: 'train', label: 'train', taskSet, results });
    summary.extraRounds = round;
    summary.extraGroups += count;
    summary.extraRollouts += launched.results.length;
  }
  summary.informative = rewards.groups?.informative ?? 0;
  return { results, rewards, summary };
}
