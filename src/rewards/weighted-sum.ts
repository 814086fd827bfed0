import type { Task } from '../contracts/task.js';
import type { LeafRewardSpec, SpecOf } from './spec.js';
import type { RewardContext, RewardResult, RolloutEvidence } from './types.js';

type ScoreLeaf = (
  spec: LeafRewardSpec,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
  partName: string,
) => Promise<RewardResult>;

/**
 * Sum of the parts' (already weighted) values minus length penalties. A tampered part overrides the sum
 * with its tamper penalty: a right answer must not buy back a rewritten test.
 */
export async function weightedSum(
  spec: SpecOf<'weighted_sum'>,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
  scoreLeaf: ScoreLeaf,
): Promise<RewardResult> {
  const parts: Record<string, number> = {};
  const flags = new Set<string>();
  let value = 0;
  let tamperValue: number | null = null;
  for (const [name, part] of Object.entries(spec.parts)) {
    const r = await scoreLeaf(part, task, evidence, ctx, name);
    parts[name] = r.value;
    value += r.value;
    for (const f of r.flags) flags.add(f);
    if (r.flags.some((f) => f.startsWith('tampered:'))) tamperValue = Math.min(tamperValue ?? Infinity, r.value);
  }
  const tokenPenalty = spec.penalties.perCompletionToken * evidence.completionTokens;
  const turnPenalty = spec.penalties.perTurn * evidence.turns;
  if (tokenPenalty > 0) parts['penalty.completion_tokens'] = -tokenPenalty;
  if (turnPenalty > 0) parts['penalty.turns'] = -turnPenalty;
  value -= tokenPenalty + turnPenalty;
  return { value: tamperValue ?? value, parts, flags: [...flags] };
}
