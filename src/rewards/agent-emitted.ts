import type { Task } from '../contracts/task.js';
import type { SpecOf } from './spec.js';
import type { RewardResult, RolloutEvidence } from './types.js';

/** Reward(s) the agent itself posted to the gateway, aggregated; `missingValue` when it posted none. */
export function agentEmitted(spec: SpecOf<'agent_emitted'>, _task: Task, evidence: RolloutEvidence): RewardResult {
  // A reward posted for one call (`span`) is that turn's (credit per turn, src/batches/turn-credit.ts), not the rollout's.
  const values = evidence.agentRewards
    .filter((r) => r.span === undefined && (spec.name === undefined || r.name === spec.name))
    .map((r) => r.value);
  if (values.length === 0)
    return {
      value: spec.missingValue * spec.weight,
      parts: { agent_emitted: spec.missingValue },
      flags: ['no_agent_reward'],
    };
  const sum = values.reduce((a, b) => a + b, 0);
  const raw = { last: values[values.length - 1]!, sum, mean: sum / values.length, max: Math.max(...values) }[
    spec.aggregate
  ];
  return { value: raw * spec.weight, parts: { agent_emitted: raw }, flags: [] };
}
