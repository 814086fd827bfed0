import { ApplicationFailure, patched, setCurrentDetails } from '@temporalio/workflow';
import { FailureType } from '../contracts/failures.js';
import type { EvalResult, EvaluationInput } from './types.js';
import { activitiesFor, validation } from './proxies.js';
import { evalSetOf, scoringSampling } from './rollout-inputs.js';

/**
 * Score a policy on the held-out tasks: one rollout per eval task, rewarded like training, never trained on.
 * Unscored rollouts (infra failures) run again as new attempts for up to `eval.retryRounds` rounds; the evaluation
 * counts only when at least `eval.minScoredFraction` of its tasks were scored, else it fails (VoltEvaluationIncomplete).
 * Runs as a child of an iteration, or alone (`temporal workflow start --type evaluation`).
 */
export async function evaluation(input: EvaluationInput): Promise<EvalResult> {
  const { iteration, label, policy } = input;
  // Also startable alone with raw JSON, so the config is checked like a run's.
  const config = await validation.validateRunConfig(input.config);
  const act = activitiesFor(config);
  await act.servePolicy({ policy });
  const taskSet = evalSetOf(config);
  const ids = await act.listTaskIds({ taskSet, limit: config.eval.tasks });
  const tasks = ids.map((taskId, i) => ({ taskId, groupId: `${label}-${taskId}`, rolloutIds: [`eval-${label}-${i}`] }));
  setCurrentDetails(`evaluating ${policy.name} on ${tasks.length} held-out tasks`);
  const base = { config, iteration, mode: 'eval' as const, label, policy, taskSet, sampling: scoringSampling(config), tasks };
  let launched = await act.launchRollouts(base);
  let rewards = await act.computeRewards({ config, iteration, mode: 'eval', label, taskSet, results: launched.results });
  // Histories recorded before retries and the scored-fraction rule replay without them.
  const honest = patched('eval-min-scored-fraction');
  for (let round = 1; honest && round <= config.eval.retryRounds && rewards.unscored.length > 0; round++) {
    setCurrentDetails(`${policy.name}: ${rewards.unscored.length} of ${tasks.length} tasks unscored; retry round ${round}`);
    await act.servePolicy({ policy }); // a restarted model server has lost the adapter
    launched = await act.launchRollouts({ ...base, rerun: rewards.unscored });
    rewards = await act.computeRewards({ config, iteration, mode: 'eval', label, taskSet, results: launched.results });
  }
  const scoredOf = `${rewards.scored}/${tasks.length} tasks scored`;
  if (honest && rewards.scored < config.eval.minScoredFraction * tasks.length) {
    const message = `evaluation of ${policy.name} is incomplete: ${scoredOf} (${rewards.infraFailed} unscored after ` +
      `${config.eval.retryRounds} retry rounds), below eval.minScoredFraction ${config.eval.minScoredFraction}`;
    setCurrentDetails(message);
    throw ApplicationFailure.create({ type: FailureType.EvaluationIncomplete, message, nonRetryable: true, details: [{ scored: rewards.scored, tasks: tasks.length, rewardsKey: rewards.rewardsKey }] });
  }
  setCurrentDetails(`${policy.name}: score ${rewards.meanReward.toFixed(3)} (${scoredOf})`);
  return {
    label,
    policy,
    score: rewards.meanReward,
    rewardSum: rewards.rewardSum,
    scored: rewards.scored,
    tasks: tasks.length,
    infraFailed: rewards.infraFailed,
    resultKey: rewards.rewardsKey,
    ...(rewards.byKind ? { byKind: rewards.byKind } : {}),
  };
}
