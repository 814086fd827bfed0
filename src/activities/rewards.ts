import { Context } from '@temporalio/activity';
import type { RunConfig } from '../config/run.js';
import { countInformativeGroups } from '../batches/groups.js';
import { countsByKind, type ScoreCounts } from '../rewards/by-kind.js';
import { loadEvidence } from '../rewards/evidence.js';
import { scoreRollout } from '../rewards/registry.js';
import { RewardInfraError } from '../rewards/types.js';
import { keys } from '../storage/keys.js';
import { requireTaskSet } from './config.js';
import type { ActivityDeps } from './deps.js';
import { rewardsFileSchema, type RewardsFile, type ScoredRolloutRecord } from '../contracts/rewards.js';
import { rolloutOutcomeRecordSchema, type LaunchedRollout } from '../contracts/rollout-outcome.js';

/** What computeRewards returns: the mean over scored rollouts, with its numerator and denominator, and what was left unscored. */
export interface RewardsSummary {
  meanReward: number;
  /** Sum of the scored rollouts' rewards: meanReward = rewardSum / scored. */
  rewardSum: number;
  scored: number;
  infraFailed: number;
  /** Rollout attempts with no reward (infra failure, reward infra failure): an evaluation runs them again. */
  unscored: { rolloutId: string; attempt: number }[];
  rewardsKey: string;
  /** The same counts per task kind, when the tasks have kinds (absent otherwise). */
  byKind?: Record<string, ScoreCounts>;
  /** Training launches: groups, and those whose rewards differ (batch.minGroupSize scored at least): dynamic sampling's target. */
  groups?: { total: number; informative: number };
}

export interface ComputeRewardsInput {
  config: RunConfig;
  iteration: number;
  mode: 'train' | 'eval';
  label: string;
  /** The pinned task set the rollouts ran (their references are scored against). */
  taskSet: string | null;
  results: LaunchedRollout[];
}

export const rewardsKeyFor = (config: RunConfig, iteration: number, mode: 'train' | 'eval', label: string) =>
  mode === 'train' ? keys.rewards(config.runId, iteration) : keys.evaluation(config.runId, iteration, label);

export const createRewardActivities = (deps: ActivityDeps) => ({
  /**
   * Score every rollout with the run's reward spec, write one rewards file, then release the rollouts' kept workdirs;
   * a retry reuses the stored file.
   */
  async computeRewards(input: ComputeRewardsInput): Promise<RewardsSummary> {
    const ctx = Context.current();
    const { config, iteration, mode, label } = input;
    const rewardsKey = rewardsKeyFor(config, iteration, mode, label);
    // Scored once: a retry after the file was written reuses it (the workdirs it scored are released by then).
    const existing = await deps.store.getJsonOrNull(rewardsKey, rewardsFileSchema);
    if (existing && sameRollouts(existing, input.results)) return summarize(existing, rewardsKey, config);
    // An evaluation's retry round re-runs only its unscored rollouts: the others keep their scores (their workdirs are gone).
    const stored = new Map((existing?.rollouts ?? []).map((r) => [`${r.rolloutId}#${r.attempt}`, r]));
    const { byId } = await deps.taskSets.load(requireTaskSet(input.taskSet));
    const rollouts: ScoredRolloutRecord[] = [];
    for (const launched of input.results) {
      ctx.heartbeat({ scored: rollouts.length, total: input.results.length });
      const kept = stored.get(`${launched.rolloutId}#${launched.attempt}`);
      if (kept) {
        rollouts.push(kept);
        continue;
      }
      const record = await deps.store.getJson(
        keys.rolloutOutcome(config.runId, iteration, launched.rolloutId),
        rolloutOutcomeRecordSchema,
      );
      const task = byId.get(record.taskId);
      if (!task) throw new Error(`task ${record.taskId} is not in the task set`);
      const base = {
        rolloutId: record.rolloutId,
        attempt: record.final.ref.attempt,
        taskId: record.taskId,
        taskKind: task.kind ?? null,
        groupId: record.groupId,
        outcome: record.final.outcome,
      };
      if (record.final.outcome === 'infra_failed') {
        rollouts.push({ ...base, reward: null, parts: {}, flags: ['infra_failed'], error: record.final.detail });
        continue;
      }
      const evidence = {
        ...(await loadEvidence(deps.store, record.final, {
          workdir: record.final.workdir,
          snapshots: record.snapshots,
        })),
        workdirScores: record.workdirScores,
      };
      try {
        const r = await scoreRollout(config.reward, task, evidence, {
          python: deps.python,
          env: process.env,
          signal: ctx.cancellationSignal,
        });
        rollouts.push({ ...base, reward: r.value, parts: r.parts, flags: r.flags, error: null });
      } catch (err) {
        if (!(err instanceof RewardInfraError)) throw err;
        rollouts.push({ ...base, reward: null, parts: {}, flags: ['reward_infra_failed'], error: err.message });
      }
    }
    const values = rollouts.flatMap((r) => (r.reward === null ? [] : [r.reward]));
    const meanReward = values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0;
    const file: RewardsFile = {
      mode,
      label,
      meanReward,
      scored: values.length,
      infraFailed: rollouts.length - values.length,
      rollouts,
    };
    await deps.store.putJson(rewardsKey, file, rewardsFileSchema);
    // Kept workdirs were only needed to score; on a long run they would fill the worker's disk.
    if (config.rollouts.runner === 'local')
      await deps.runner.release?.(
        config.runId,
        iteration,
        input.results.map((r) => r.rolloutId),
      );
    return summarize(file, rewardsKey, config);
  },
});

function summarize(file: RewardsFile, rewardsKey: string, config: RunConfig): RewardsSummary {
  const rewardSum = file.rollouts.reduce((a, r) => a + (r.reward ?? 0), 0);
  const unscored = file.rollouts
    .filter((r) => r.reward === null)
    .map((r) => ({ rolloutId: r.rolloutId, attempt: r.attempt }));
  const byKind = countsByKind(file.rollouts);
  const groups = file.mode === 'train' ? countInformativeGroups(file.rollouts, config.batch.minGroupSize) : null;
  return {
    meanReward: file.meanReward,
    rewardSum,
    scored: file.scored,
    infraFailed: file.infraFailed,
    unscored,
    rewardsKey,
    ...(byKind ? { byKind } : {}),
    ...(groups ? { groups } : {}),
  };
}

/** The stored file scored exactly these rollout attempts. */
function sameRollouts(file: RewardsFile, results: readonly LaunchedRollout[]): boolean {
  const ids = (xs: readonly { rolloutId: string; attempt: number }[]) =>
    xs
      .map((x) => `${x.rolloutId}#${x.attempt}`)
      .sort()
      .join('\n');
  return Array.isArray(file.rollouts) && ids(file.rollouts) === ids(results);
}
