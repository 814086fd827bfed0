import type { temporal } from '@temporalio/proto';
import type { PayloadConverter } from '@temporalio/common';
import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { EvalResult, RunState, RunStatus, TrainingIterationResult } from '../workflows/types.js';
import type { ConfigSummary } from './report-data.js';

type History = temporal.api.history.v1.IHistory;

const payloads = (p: temporal.api.common.v1.IPayloads | null | undefined) => p?.payloads ?? [];

/** The input of the latest execution of the run: its (possibly tuned) config and the state it continued from. */
export function startInput(
  history: History,
  converter: PayloadConverter,
): { config: RunConfig | null; resumeState: RunState | null; firstExecutionRunId: string | null } {
  const attrs = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const [config, resumeState] = payloads(attrs?.input).map((p) => converter.fromPayload<unknown>(p));
  return {
    config: (config as RunConfig | undefined) ?? null,
    resumeState: (resumeState as RunState | undefined) ?? null,
    firstExecutionRunId: attrs?.firstExecutionRunId || null,
  };
}

/** How the run's rollouts were isolated, as an operator should read it. */
export function sandboxLabel(config: Pick<RunConfig, 'rollouts'>): string {
  if (config.rollouts.runner === 'kubernetes') return 'kubernetes pods';
  return config.rollouts.sandbox === 'none' ? 'NONE (rollouts.sandbox: "none": agents ran unisolated)' : 'bubblewrap';
}

export function summarizeConfig(config: RunConfig): ConfigSummary {
  return {
    model: config.model.base,
    iterations: config.iterations,
    groupSize: config.rollouts.groupSize,
    tasksPerIteration: config.rollouts.tasksPerIteration,
    sandbox: sandboxLabel(config),
    rewardKind:
      config.reward.kind === 'weighted_sum'
        ? `weighted_sum(${Object.values(config.reward.parts)
            .map((p) => p.kind)
            .join(', ')})`
        : config.reward.kind,
  };
}

/**
 * The status of a run that ended without a result (failed, cancelled, terminated), rebuilt from its history alone —
 * the state it continued from plus every child iteration that completed — so no worker has to replay it.
 */
export function statusFromHistory(runId: string, history: History, converter: PayloadConverter): RunStatus {
  const { config, resumeState } = startInput(history, converter);
  let state: RunState | null = resumeState;
  for (const event of history.events ?? []) {
    // The run owns "best": its promotion and rollback activities say what moved.
    const scheduled = event.activityTaskScheduledEventAttributes;
    const moved =
      scheduled && state
        ? movedBest(
            scheduled.activityType?.name,
            payloads(scheduled.input).map((p) => converter.fromPayload<unknown>(p))[0],
          )
        : null;
    if (moved && state) {
      const { best, promotedIteration } = moved;
      state = {
        ...state,
        best,
        history: state.history.map((h) => (h.iteration === promotedIteration ? { ...h, promoted: true } : h)),
      };
    }
    const done = event.childWorkflowExecutionCompletedEventAttributes;
    if (!done) continue;
    const [result] = payloads(done.result).map((p) => converter.fromPayload<unknown>(p));
    if (done.workflowType?.name === 'evaluation' && !state) {
      const base = result as EvalResult;
      const { score, rewardSum, scored, tasks } = base;
      state = {
        iteration: 0,
        policy: base.policy,
        best: { policy: base.policy, score },
        baseEval: {
          score,
          rewardSum,
          scored,
          tasks,
          ...(base.byKind ? { byKind: base.byKind } : {}),
          ...(base.extraSets ? { extraSets: base.extraSets } : {}),
        },
        history: [],
        promotions: [{ policy: base.policy, score, iteration: null }],
        bestIteration: null,
      };
    } else if (done.workflowType?.name === 'trainingIteration' && state) {
      const r = result as TrainingIterationResult;
      state = {
        ...state,
        iteration: r.summary.iteration + 1,
        policy: r.policy,
        history: [...state.history, r.summary],
      };
    }
  }
  return {
    runId,
    iteration: state?.iteration ?? 0,
    iterations: config?.iterations ?? state?.iteration ?? 0,
    phase: 'done',
    paused: false,
    policy: state?.policy ?? null,
    best: state?.best ?? null,
    baseEval: state?.baseEval ?? null,
    meanRewards: state?.history.map((h) => h.meanReward) ?? [],
    evalScores: state?.history.map((h) => h.evalScore) ?? [],
    history: state?.history ?? [],
    // A config that never validated ran nothing; 'bubblewrap' is what validation would have defaulted it to.
    sandbox: config?.rollouts?.sandbox ?? 'bubblewrap',
  };
}

/** The best after a promoteCheckpoint / rollbackCheckpoint the run scheduled, from its input; null for other activities. */
function movedBest(
  type: string | null | undefined,
  input: unknown,
): { best: NonNullable<RunStatus['best']>; promotedIteration: number | null } | null {
  if (type === 'promoteCheckpoint') {
    const i = input as { iteration: number; policy: PolicyRef; score: number };
    return { best: { policy: i.policy, score: i.score }, promotedIteration: i.iteration };
  }
  if (type === 'rollbackCheckpoint') {
    const i = input as { to: { policy: PolicyRef; score: number } };
    return { best: { policy: i.to.policy, score: i.to.score }, promotedIteration: null };
  }
  return null;
}
