import { setCurrentDetails } from '@temporalio/workflow';
import type { EvalResult, EvaluationInput } from './types.js';
import { activitiesFor, validation } from './proxies.js';
import { evalSetOf, scoringSampling } from './rollout-inputs.js';

/**
 * Score a policy on the held-out tasks: one rollout per eval task, rewarded like training, never trained on.
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
  const launched = await act.launchRollouts({ config, iteration, mode: 'eval', label, policy, taskSet, sampling: scoringSampling(config), tasks });
  const rewards = await act.computeRewards({ config, iteration, mode: 'eval', label, taskSet, results: launched.results });
  setCurrentDetails(`${policy.name}: score ${rewards.meanReward.toFixed(3)} on ${rewards.scored} tasks`);
  return {
    label,
    policy,
    score: rewards.meanReward,
    scored: rewards.scored,
    infraFailed: rewards.infraFailed,
    resultKey: rewards.rewardsKey,
  };
}
