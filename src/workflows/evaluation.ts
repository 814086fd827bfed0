import { ApplicationFailure, setCurrentDetails } from '@temporalio/workflow';
import type { RunConfig } from '../config/run.js';
import { FailureType } from '../contracts/failures.js';
import type { PolicyRef } from '../contracts/policy.js';
import { policyLabel } from '../contracts/policy-set.js';
import type { ExtraSetResult, EvalResult, EvaluationInput } from './types.js';
import { activitiesFor, validation } from './proxies.js';
import { evalSetOf, scoringSampling } from './rollout-inputs.js';

/**
 * Score a policy on the held-out tasks: one rollout per eval task, rewarded like training, never trained on.
 * Unscored rollouts (infra failures) run again as new attempts for up to `eval.retryRounds` rounds; the evaluation
 * counts only when at least `eval.minScoredFraction` of its tasks were scored, else it fails (VoltEvaluationIncomplete).
 * Each of `eval.extraSets` is then scored the same way and reported beside it, never used for promotion (an
 * incomplete one is reported as such). Runs as a child of an iteration, or alone (`temporal workflow start --type evaluation`).
 */
export async function evaluation(input: EvaluationInput): Promise<EvalResult> {
  const { iteration, label, policy } = input;
  // Also startable alone with raw JSON, so the config is checked like a run's.
  const config = await validation.validateRunConfig(input.config);
  const act = activitiesFor(config);
  await act.servePolicy({ policy });
  const main = await scoreSet(config, {
    iteration,
    label,
    policy,
    taskSet: evalSetOf(config),
    limit: config.eval.tasks,
    rolloutPrefix: `eval-${label}`,
    what: 'held-out',
  });
  if (main.error !== null) {
    setCurrentDetails(main.error.message);
    throw ApplicationFailure.create({
      type: FailureType.EvaluationIncomplete,
      message: main.error.message,
      nonRetryable: true,
      details: [main.error.details],
    });
  }
  const r = main.rewards;
  setCurrentDetails(
    `${policyLabel(policy)}: score ${r.meanReward.toFixed(3)} (${r.scored}/${main.tasks} tasks scored)`,
  );
  const result: EvalResult = {
    label,
    policy,
    score: r.meanReward,
    rewardSum: r.rewardSum,
    scored: r.scored,
    tasks: main.tasks,
    infraFailed: r.infraFailed,
    resultKey: r.rewardsKey,
    ...(r.byKind ? { byKind: r.byKind } : {}),
  };
  if (config.eval.extraSets.length > 0) {
    result.extraSets = [];
    for (const x of config.eval.extraSets) {
      const setLabel = `${label}-${x.name}`;
      const scored = await scoreSet(config, {
        iteration,
        label: setLabel,
        policy,
        taskSet: x.set ?? null,
        limit: x.tasks,
        rolloutPrefix: `eval-${setLabel}`,
        what: `set ${x.name}`,
      });
      const s = scored.rewards;
      const one: ExtraSetResult = {
        name: x.name,
        score: scored.error ? null : s.meanReward,
        rewardSum: s.rewardSum,
        scored: s.scored,
        tasks: scored.tasks,
        resultKey: s.rewardsKey,
        error: scored.error?.message ?? null,
        ...(s.byKind ? { byKind: s.byKind } : {}),
      };
      result.extraSets.push(one);
      setCurrentDetails(
        `${policyLabel(policy)}: set ${x.name} ${one.score === null ? 'incomplete' : one.score.toFixed(3)} (${s.scored}/${scored.tasks} tasks scored)`,
      );
    }
  }
  return result;
}

interface SetToScore {
  iteration: number;
  /** Names the rewards file (keys.evaluation) and the groups. */
  label: string;
  policy: PolicyRef;
  taskSet: string | null;
  /** The first N tasks of the set; undefined: all. */
  limit: number | undefined;
  rolloutPrefix: string;
  what: string;
}

/** One set's rollouts and rewards, with retry rounds for unscored ones; `error` when below eval.minScoredFraction. */
async function scoreSet(config: RunConfig, s: SetToScore) {
  const act = activitiesFor(config);
  const { iteration, label, policy, taskSet } = s;
  const ids = await act.listTaskIds({ taskSet, ...(s.limit !== undefined && { limit: s.limit }) });
  const tasks = ids.map((taskId, i) => ({
    taskId,
    groupId: `${label}-${taskId}`,
    rolloutIds: [`${s.rolloutPrefix}-${i}`],
  }));
  setCurrentDetails(`evaluating ${policyLabel(policy)} on ${tasks.length} ${s.what} tasks`);
  const base = {
    config,
    iteration,
    mode: 'eval' as const,
    label,
    policy,
    taskSet,
    sampling: scoringSampling(config),
    tasks,
  };
  let launched = await act.launchRollouts(base);
  let rewards = await act.computeRewards({
    config,
    iteration,
    mode: 'eval',
    label,
    taskSet,
    results: launched.results,
  });
  for (let round = 1; round <= config.eval.retryRounds && rewards.unscored.length > 0; round++) {
    setCurrentDetails(
      `${policy.name}: ${rewards.unscored.length} of ${tasks.length} ${s.what} tasks unscored; retry round ${round}`,
    );
    await act.servePolicy({ policy }); // a restarted model server has lost the adapter
    launched = await act.launchRollouts({ ...base, rerun: rewards.unscored });
    rewards = await act.computeRewards({ config, iteration, mode: 'eval', label, taskSet, results: launched.results });
  }
  let error: { message: string; details: { scored: number; tasks: number; rewardsKey: string } } | null = null;
  if (rewards.scored < config.eval.minScoredFraction * tasks.length) {
    const message =
      `evaluation of ${policy.name}${s.what === 'held-out' ? '' : ` on ${s.what}`} is incomplete: ${rewards.scored}/${tasks.length} tasks scored (${rewards.infraFailed} unscored after ` +
      `${config.eval.retryRounds} retry rounds), below eval.minScoredFraction ${config.eval.minScoredFraction}`;
    error = { message, details: { scored: rewards.scored, tasks: tasks.length, rewardsKey: rewards.rewardsKey } };
  }
  return { rewards, tasks: tasks.length, error };
}
