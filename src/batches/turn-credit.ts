import { groupAdvantages, type Estimator } from './advantages.js';

/** A reward the agent posted for one call: `span` is the call's seq within its rollout attempt. */
export interface TurnReward {
  span: number;
  value: number;
}

/**
 * Credit per turn (batch.credit `per_turn`). A rollout's trained turns are its trained calls in seq order, t = 0…T-1.
 * Turn t's own reward r_t is the sum of the turn rewards posted for it — a reward posted for a call that is not a
 * trained turn (a frozen role's, a side call's) goes to the last trained turn before that call, or to the first turn
 * when none came before — and the last turn also gets the rollout's reward R. Turn t's return is the discounted sum
 * from t on:
 *
 *   G_t = Σ_{k=t}^{T-1} γ^(k-t) r_k      (so G_0 = R + Σ r_k when γ = 1: broadcast's return)
 *
 * `turnSeqs` must be increasing; [] gives [].
 */
export function turnReturns(
  turnSeqs: readonly number[],
  reward: number,
  turnRewards: readonly TurnReward[],
  gamma: number,
): number[] {
  const n = turnSeqs.length;
  if (n === 0) return [];
  const own = new Array<number>(n).fill(0);
  for (const { span, value } of turnRewards) {
    let t = 0;
    while (t + 1 < n && turnSeqs[t + 1]! <= span) t += 1;
    own[t]! += value;
  }
  own[n - 1]! += reward;
  const returns = new Array<number>(n);
  let g = 0;
  for (let t = n - 1; t >= 0; t--) {
    g = own[t]! + gamma * g;
    returns[t] = g;
  }
  return returns;
}

/**
 * Group baselines over matching turns: turn t of every rollout of the group that has a turn t is compared with the
 * others' turn t by the group estimator (grpo, dr_grpo, rloo: advantages.ts). A turn index fewer than `minGroupSize`
 * rollouts reach has no baseline: advantage 0. `returns[i]` is rollout i's G_0…G_{T_i-1}; the result has the same shape.
 */
export function perTurnAdvantages(
  returns: readonly (readonly number[])[],
  estimator: Estimator,
  eps: number,
  minGroupSize: number,
): number[][] {
  const out = returns.map((g) => new Array<number>(g.length).fill(0));
  const longest = Math.max(0, ...returns.map((g) => g.length));
  for (let t = 0; t < longest; t++) {
    const members = returns.flatMap((g, i) => (t < g.length ? [i] : []));
    if (members.length < minGroupSize) continue;
    const adv = groupAdvantages(
      members.map((i) => returns[i]![t]!),
      estimator,
      eps,
    );
    members.forEach((i, k) => (out[i]![t] = adv[k]!));
  }
  return out;
}
