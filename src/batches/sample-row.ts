import type { BatchConfig } from './config.js';
import type { PlannedRollout } from './groups.js';
import type { Trajectory } from './trajectories.js';
import type { SampleRow } from '../contracts/sample.js';

export type SampleDropReason = 'prompt_too_long' | 'over_max_tokens' | 'no_trainable_tokens';

/** The trajectory as a row, truncated to maxTokens if configured; a drop reason when it cannot be used. */
export function toSampleRow(
  t: Trajectory,
  r: PlannedRollout,
  index: number,
  config: BatchConfig,
): SampleRow | SampleDropReason {
  let { responseIds, lossMask, logprobs } = t;
  let truncated = false;
  const total = t.promptIds.length + responseIds.length;
  if (total > config.maxTokens) {
    if (t.promptIds.length >= config.maxTokens) return 'prompt_too_long';
    if (config.overLength === 'drop') return 'over_max_tokens';
    const keep = config.maxTokens - t.promptIds.length;
    responseIds = responseIds.slice(0, keep);
    lossMask = lossMask.slice(0, keep);
    logprobs = logprobs.slice(0, keep);
    truncated = true;
  }
  if (!lossMask.includes(1)) return 'no_trainable_tokens';
  const ref = r.result.ref;
  return {
    sample_id: `${ref.rolloutId}.a${ref.attempt}.s${index}`,
    run_id: ref.runId,
    iteration: ref.iteration,
    rollout_id: ref.rolloutId,
    attempt: ref.attempt,
    task_id: r.result.taskId,
    group_id: r.result.groupId,
    span_ids: t.spanIds,
    prompt_ids: t.promptIds,
    response_ids: responseIds,
    loss_mask: lossMask,
    rollout_logprobs: logprobs,
    advantage: r.advantage,
    reward: r.reward,
    truncated,
  };
}
