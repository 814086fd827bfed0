import { condition, continueAsNew, executeChild, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import { policyLabel } from '../contracts/policy-set.js';
import { BestScoreKey, IterationKey, RunIdKey } from './definitions.js';
import { evaluation } from './evaluation.js';
import { beatsBest } from './promotion.js';
import { activitiesFor, validation } from './proxies.js';
import { finishRun, newRunContext, serialised, type RunContext } from './run-context.js';
import { setRunHandlers } from './run-handlers.js';
import { endWithoutNewTasks, planLineage, recordLineage } from './run-lineage.js';
import { setRunDetails } from './run-details.js';
import { runIdFromWorkflowId } from './run-id.js';
import { trainingIteration } from './training-iteration.js';
import type { BaseEval, IterationSummary, RunLineage, RunState, RunStatus, TrainingIterationResult } from './types.js';

/**
 * A training run, started with the run config as its only argument (`--input-file run.json`): validate the config
 * (again — it may come raw from the Temporal CLI or Web UI), plan a lineage run, evaluate the policy to beat once,
 * then one child `trainingIteration` per iteration until `iterations`, promoting each candidate that beats the best,
 * continuing-as-new with the small RunState when Temporal suggests it or every `continueAsNewEvery` iterations.
 */
export async function trainingRun(rawConfig: RunConfig, resumeState?: RunState): Promise<RunStatus> {
  const run = newRunContext(rawConfig, resumeState);
  setRunHandlers(run);
  await validateConfig(run, rawConfig);
  if (!run.state) {
    const plan = await planLineage(run);
    if (plan?.noNewTasks) return endWithoutNewTasks(run, plan.lineage);
    run.state = await evaluateBase(run, plan?.lineage ?? null);
  }
  let iterationsThisRun = 0;
  while (run.state.iteration < run.config.iterations) {
    if (run.paused) setRunDetails(run.config.runId, `paused before iteration ${run.state.iteration}`);
    await condition(() => !run.paused);
    const result = await runIteration(run, run.state);
    await promoteIfBetter(run, result.summary);
    run.state = recordIteration(run.config.runId, run.state, result);
    iterationsThisRun += 1;
    const more = run.state.iteration < run.config.iterations;
    if (more && (workflowInfo().continueAsNewSuggested || iterationsThisRun >= run.config.continueAsNewEvery)) {
      await condition(() => !run.paused);
      await continueAsNew<typeof trainingRun>(run.config, run.state);
    }
  }
  await recordLineage(run);
  return finishRun(run);
}

/** The first activity re-validates: a raw start from the CLI/UI fails here, non-retryably, naming the bad fields. */
async function validateConfig(run: RunContext, rawConfig: RunConfig): Promise<void> {
  run.config = await validation.validateRunConfig(rawConfig);
  run.validated = true;
  // The run id is the workflow id, so runs started by a Schedule (id + timestamp) never share storage.
  const runId = runIdFromWorkflowId(workflowInfo().workflowId);
  if (run.config.runId !== runId) run.config = { ...run.config, runId };
  upsertSearchAttributes([{ key: RunIdKey, value: run.config.runId }]);
}

/**
 * The run's first state: the policy to beat (the base model, or the lineage's incumbent) evaluated once, as the
 * first entry of `promotions`. With evaluation off nothing is ever promoted, so its score (0) is never compared.
 */
async function evaluateBase(run: RunContext, lineage: RunLineage | null): Promise<RunState> {
  const { config } = run;
  const basePolicy: PolicyRef = { name: config.model.base, checkpointKey: null, sha256: null, iteration: null };
  const incumbent = lineage?.incumbent ?? basePolicy;
  const evaluated = config.eval.everyIterations > 0;
  const baseEval = evaluated ? await evaluatePolicy(run, incumbent) : null;
  const score = baseEval?.score ?? 0;
  upsertSearchAttributes([{ key: BestScoreKey, value: score }]);
  return {
    iteration: 0,
    policy: lineage?.startedFrom ?? basePolicy,
    best: { policy: incumbent, score },
    baseEval,
    history: [],
    promotions: [{ policy: incumbent, score, iteration: null }],
    bestIteration: null,
    ...(lineage && { lineage: { ...lineage, incumbentScore: evaluated ? score : null } }),
  };
}

async function evaluatePolicy(run: RunContext, policy: PolicyRef): Promise<BaseEval> {
  const label = policy.sha256 ? 'incumbent' : 'base';
  run.phase = 'evaluating-base';
  setRunDetails(run.config.runId, `evaluating the ${label} policy ${policy.name}`);
  const base = await executeChild(evaluation, {
    workflowId: `${run.config.runId}-eval-${label}`,
    args: [{ config: run.config, iteration: 0, label, policy }],
    staticSummary: `held-out evaluation of the ${label} policy`,
  });
  return {
    score: base.score,
    rewardSum: base.rewardSum,
    scored: base.scored,
    tasks: base.tasks,
    ...(base.byKind ? { byKind: base.byKind } : {}),
    ...(base.extraSets ? { extraSets: base.extraSets } : {}),
  };
}

/** One child iteration from the run's current policy: rollouts, update and the candidate's evaluation. */
async function runIteration(run: RunContext, state: RunState): Promise<TrainingIterationResult> {
  const { iteration } = state;
  upsertSearchAttributes([{ key: IterationKey, value: iteration }]);
  return executeChild(trainingIteration, {
    workflowId: `${run.config.runId}-iter-${iteration}`,
    args: [{ config: run.config, iteration, policy: state.policy }],
    staticSummary: `iteration ${iteration}`,
  });
}

/** The run owns "best": the candidate is promoted when it beats the best at that moment (a rollback may have moved it). */
async function promoteIfBetter(run: RunContext, summary: IterationSummary): Promise<void> {
  const { candidate, evalScore, iteration } = summary;
  if (!candidate || evalScore === null) return;
  await serialised(run, async () => {
    const s = run.state!;
    if (!beatsBest(evalScore, s.best, run.config.eval.promoteMargin)) return;
    run.phase = 'promoting';
    setRunDetails(
      run.config.runId,
      `iteration ${iteration}: promoting ${policyLabel(candidate)}: ${evalScore.toFixed(3)} > ${s.best.score.toFixed(3)}`,
    );
    await activitiesFor(run.config).promoteCheckpoint({
      config: run.config,
      iteration,
      policy: candidate,
      score: evalScore,
    });
    s.best = { policy: candidate, score: evalScore };
    s.bestIteration = iteration;
    s.promotions = [...s.promotions, { policy: candidate, score: evalScore, iteration }];
    summary.promoted = true;
  });
}

/** The state the next iteration starts from: on-policy, so it samples from this iteration's policy. */
function recordIteration(runId: string, state: RunState, { summary, policy }: TrainingIterationResult): RunState {
  const next = { ...state, iteration: summary.iteration + 1, policy, history: [...state.history, summary] };
  upsertSearchAttributes([{ key: BestScoreKey, value: next.best.score }]);
  setRunDetails(
    runId,
    `iteration ${summary.iteration} done: mean reward ${summary.meanReward.toFixed(3)}, ` +
      `eval ${summary.evalScore?.toFixed(3) ?? '-'}, best ${next.best.score.toFixed(3)} (${policyLabel(next.best.policy)})`,
  );
  return next;
}
