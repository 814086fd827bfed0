import type { RolloutResult } from '../contracts/rollout.js';
import { groupAdvantages } from './advantages.js';
import type { BatchConfig } from './config.js';
import type { TurnReward } from './turn-credit.js';

/** A rollout attempt and its scalar reward; null when the reward itself failed for infra reasons. */
export interface ScoredRollout {
  result: RolloutResult;
  reward: number | null;
  /** Rewards the agent posted for single calls (credit per turn, turn-credit.ts). */
  turnRewards?: readonly TurnReward[];
}

/**
 * A rollout that made it into the batch, with the advantage every one of its samples gets (broadcast; per_turn
 * replaces it per call). `reward` is its return: the rollout's reward plus its turn rewards.
 */
export interface PlannedRollout {
  result: RolloutResult;
  reward: number;
  advantage: number;
  /** The scalar reward alone, and the turn rewards (per_turn splits them over the calls). */
  outcomeReward: number;
  turnRewards: readonly TurnReward[];
}

export type RolloutDropReason =
  'infra_failed' | 'reward_infra_failed' | 'eval_rollout' | 'group_too_small' | 'zero_variance' | 'below_threshold';

export interface GroupPlan {
  rollouts: PlannedRollout[];
  groups: { total: number; used: number };
  /** Rollouts left out, by reason (infra failures are excluded, never scored zero). */
  droppedRollouts: Partial<Record<RolloutDropReason, number>>;
  droppedGroups: Partial<Record<'group_too_small' | 'zero_variance', number>>;
  /**
   * Multiplies the loss (batch.lossNormalizer): with `all_groups`, the kept rollouts' share of the kept and the
   * zero-variance rollouts, so the dropped ones count in the mean as advantage-0 samples would; else 1.
   */
  lossScale: number;
}

const bump = <K extends string>(m: Partial<Record<K, number>>, k: K, by = 1) => {
  m[k] = (m[k] ?? 0) + by;
};

/** Whether a group's scored rewards carry a learning signal: enough of them, and not all equal. */
export const isInformativeGroup = (rewards: readonly number[], minGroupSize: number): boolean =>
  rewards.length >= minGroupSize && rewards.some((r) => r !== rewards[0]);

/**
 * The same question for a batch config: under rejection sampling a group is informative when one of its rollouts
 * passes the threshold (it then gives the batch a sample), whatever its size or variance.
 */
export const informativeFor =
  (config: Pick<BatchConfig, 'estimator' | 'rejectionThreshold' | 'minGroupSize'>) =>
  (rewards: readonly number[]): boolean =>
    config.estimator === 'rejection_sampling'
      ? rewards.some((r) => r >= config.rejectionThreshold)
      : isInformativeGroup(rewards, config.minGroupSize);

/** Groups in a scored launch, and how many of them are informative (dynamic sampling's target); unscored rollouts do not count. */
export function countInformativeGroups(
  scored: readonly { groupId: string; reward: number | null }[],
  informative: (rewards: readonly number[]) => boolean,
): { total: number; informative: number } {
  const byGroup = new Map<string, number[]>();
  for (const s of scored) {
    if (!byGroup.has(s.groupId)) byGroup.set(s.groupId, []);
    if (s.reward !== null && Number.isFinite(s.reward)) byGroup.get(s.groupId)!.push(s.reward);
  }
  return {
    total: byGroup.size,
    informative: [...byGroup.values()].filter(informative).length,
  };
}

type Member = Omit<PlannedRollout, 'advantage'>;

/** Group rollouts by groupId and compute each group's advantages; groups keep first-seen order. */
export function planGroups(scored: Iterable<ScoredRollout>, config: BatchConfig): GroupPlan {
  const plan: GroupPlan = {
    rollouts: [],
    groups: { total: 0, used: 0 },
    droppedRollouts: {},
    droppedGroups: {},
    lossScale: 1,
  };
  const byGroup = new Map<string, Member[]>();
  for (const s of scored) {
    if (!byGroup.has(s.result.groupId)) byGroup.set(s.result.groupId, []);
    if (s.result.mode !== 'train') {
      bump(plan.droppedRollouts, 'eval_rollout');
      continue;
    }
    if (s.result.outcome === 'infra_failed') {
      bump(plan.droppedRollouts, 'infra_failed');
      continue;
    }
    if (s.reward === null || !Number.isFinite(s.reward)) {
      bump(plan.droppedRollouts, 'reward_infra_failed');
      continue;
    }
    const turnRewards = s.turnRewards ?? [];
    const reward = turnRewards.reduce((a, t) => a + t.value, s.reward);
    byGroup.get(s.result.groupId)!.push({ result: s.result, reward, outcomeReward: s.reward, turnRewards });
  }
  plan.groups.total = byGroup.size;
  if (config.estimator === 'rejection_sampling') return planRejectionSampling(plan, byGroup, config);
  for (const members of byGroup.values()) {
    const rewards = members.map((m) => m.reward);
    let drop: 'group_too_small' | 'zero_variance' | null = null;
    if (members.length < config.minGroupSize) drop = 'group_too_small';
    // Per turn, equal returns can still differ turn by turn (discounting, where the turn rewards fall): kept.
    else if (
      config.dropZeroVariance &&
      config.credit === 'broadcast' &&
      !isInformativeGroup(rewards, config.minGroupSize)
    )
      drop = 'zero_variance';
    if (drop) {
      bump(plan.droppedGroups, drop);
      if (members.length > 0) bump(plan.droppedRollouts, drop, members.length);
      continue;
    }
    const advantages = groupAdvantages(rewards, config.estimator, config.eps);
    members.forEach((m, i) => plan.rollouts.push({ ...m, advantage: advantages[i]! }));
    plan.groups.used += 1;
  }
  const silent = plan.droppedRollouts.zero_variance ?? 0;
  if (config.lossNormalizer === 'all_groups' && plan.rollouts.length > 0) {
    plan.lossScale = plan.rollouts.length / (plan.rollouts.length + silent);
  }
  return plan;
}

/** Expert iteration: every rollout whose reward passes the threshold, advantage 1 (the trainer's NLL weight). */
function planRejectionSampling(plan: GroupPlan, byGroup: Map<string, Member[]>, config: BatchConfig): GroupPlan {
  for (const members of byGroup.values()) {
    const kept = members.filter((m) => m.reward >= config.rejectionThreshold);
    if (members.length > kept.length) bump(plan.droppedRollouts, 'below_threshold', members.length - kept.length);
    for (const m of kept) plan.rollouts.push({ ...m, advantage: 1 });
    if (kept.length > 0) plan.groups.used += 1;
  }
  return plan;
}
