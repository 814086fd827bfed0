import { batchConfigFor } from '../batches/config.js';
import { countInformativeGroups, informativeFor } from '../batches/groups.js';
import type { RunConfig } from '../config/run.js';
import { rewardsFileSchema, type RewardsFile, type ScoredRolloutRecord } from '../contracts/rewards.js';
import { rolloutOutcomeRecordSchema, type LaunchedRollout } from '../contracts/rollout-outcome.js';
import type { Span } from '../contracts/span.js';
import type { Task } from '../contracts/task.js';
import type { RolloutRunner } from '../rollouts/spec.js';
import { keys } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import { readSpans } from '../storage/spans.js';
import type { PinnedTaskSets } from '../tasks/pinned-task-sets.js';
import type { RolloutTraceExporter } from '../telemetry/rollout-traces.js';
import { countsByKind, type ScoreCounts } from './by-kind.js';
import { loadEvidence } from './evidence.js';
import { scoreRollout } from './registry.js';
import { RewardInfraError } from './types.js';

/** What scoring returns: the mean over scored rollouts, with its numerator and denominator, and what was left unscored. */
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

export interface ScoreRolloutsDeps {
  store: ObjectStore;
  taskSets: Pick<PinnedTaskSets, 'load'>;
  /** The local runner, whose kept workdirs are released once scored. */
  runner: Pick<RolloutRunner, 'release'>;
  python: string;
  /** Where rewards read their keys from (an LLM judge's API key). */
  env: Record<string, string | undefined>;
  /** Export each scored rollout as an OTLP trace once its rewards file is stored; best effort, never fails scoring. */
  traces?: RolloutTraceExporter | null;
}

/** Where a launch's rewards file is stored: the iteration's training rewards, or one evaluation's. */
export const rewardsKeyFor = (config: RunConfig, iteration: number, mode: 'train' | 'eval', label: string) =>
  mode === 'train' ? keys.rewards(config.runId, iteration) : keys.evaluation(config.runId, iteration, label);

/**
 * Score every rollout with the run's reward spec, write one rewards file, then release the rollouts' kept workdirs.
 * Scored once: a retry after the file was written reuses it (the workdirs it scored are released by then).
 */
export async function scoreRollouts(
  input: ComputeRewardsInput,
  deps: ScoreRolloutsDeps,
  opts: { signal: AbortSignal; onProgress: (progress: { scored: number; total: number }) => void },
): Promise<RewardsSummary> {
  const { config, iteration, mode, label } = input;
  const rewardsKey = rewardsKeyFor(config, iteration, mode, label);
  const existing = await deps.store.getJsonOrNull(rewardsKey, rewardsFileSchema);
  if (existing && sameRollouts(existing, input.results)) return summarize(existing, rewardsKey, config, iteration);
  // An evaluation's retry round re-runs only its unscored rollouts: the others keep their scores (their workdirs are gone).
  const stored = new Map((existing?.rollouts ?? []).map((r) => [`${r.rolloutId}#${r.attempt}`, r]));
  const { byId } = await deps.taskSets.load(input.taskSet);
  const rollouts: ScoredRolloutRecord[] = [];
  for (const launched of input.results) {
    opts.onProgress({ scored: rollouts.length, total: input.results.length });
    rollouts.push(
      stored.get(`${launched.rolloutId}#${launched.attempt}`) ??
        (await scoreOne(input, launched.rolloutId, byId, deps, opts.signal)),
    );
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
  if (deps.traces) await exportTraces(deps.traces, deps.store, config.runId, iteration, mode, file);
  // Kept workdirs were only needed to score; on a long run they would fill the worker's disk.
  if (config.rollouts.runner === 'local')
    await deps.runner.release?.(
      config.runId,
      iteration,
      input.results.map((r) => r.rolloutId),
    );
  return summarize(file, rewardsKey, config, iteration);
}

/** The scored rollouts as traces (telemetry): a collector that is down is logged, never a failed iteration. */
async function exportTraces(
  traces: RolloutTraceExporter,
  store: ObjectStore,
  runId: string,
  iteration: number,
  mode: 'train' | 'eval',
  file: RewardsFile,
): Promise<void> {
  try {
    for (const record of file.rollouts) {
      const spans: Span[] = [];
      for await (const s of readSpans(store, {
        runId,
        iteration,
        rolloutId: record.rolloutId,
        attempt: record.attempt,
      }))
        spans.push(s);
      traces.export({ runId, iteration, mode, record, spans });
    }
    await traces.flush();
  } catch (err) {
    console.warn(`volt: OTLP trace export of run ${runId} iteration ${iteration} failed: ${(err as Error).message}`);
  }
}

/** One rollout's reward from its outcome record and evidence; an infra failure (agent or reward) is left unscored. */
async function scoreOne(
  input: ComputeRewardsInput,
  rolloutId: string,
  byId: ReadonlyMap<string, Task>,
  deps: ScoreRolloutsDeps,
  signal: AbortSignal,
): Promise<ScoredRolloutRecord> {
  const { config, iteration } = input;
  const record = await deps.store.getJson(
    keys.rolloutOutcome(config.runId, iteration, rolloutId),
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
    durationMs: record.final.durationMs,
  };
  if (record.final.outcome === 'infra_failed')
    return {
      ...base,
      reward: null,
      parts: {},
      flags: ['infra_failed'],
      error: record.final.detail,
      calls: null,
      completionTokens: null,
    };
  const evidence = {
    ...(await loadEvidence(deps.store, record.final, { workdir: record.final.workdir, snapshots: record.snapshots })),
    workdirScores: record.workdirScores,
  };
  const turns = evidence.agentRewards.flatMap((r) => (r.span === undefined ? [] : [{ span: r.span, value: r.value }]));
  const usage = {
    calls: evidence.turns,
    completionTokens: evidence.completionTokens,
    ...(turns.length > 0 && { turnRewards: turns }),
  };
  try {
    const r = await scoreRollout(config.reward, task, evidence, { python: deps.python, env: deps.env, signal });
    return { ...base, ...usage, reward: r.value, parts: r.parts, flags: r.flags, error: null };
  } catch (err) {
    if (!(err instanceof RewardInfraError)) throw err;
    return { ...base, ...usage, reward: null, parts: {}, flags: ['reward_infra_failed'], error: err.message };
  }
}

function summarize(file: RewardsFile, rewardsKey: string, config: RunConfig, iteration: number): RewardsSummary {
  const rewardSum = file.rollouts.reduce((a, r) => a + (r.reward ?? 0), 0);
  const unscored = file.rollouts
    .filter((r) => r.reward === null)
    .map((r) => ({ rolloutId: r.rolloutId, attempt: r.attempt }));
  const byKind = countsByKind(file.rollouts);
  const informative = informativeFor(batchConfigFor(config.batch, iteration));
  const groups = file.mode === 'train' ? countInformativeGroups(file.rollouts, informative) : null;
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
