/** Group-relative advantage estimators; each returns one advantage per reward, in order. */
export type Estimator = 'grpo' | 'dr_grpo' | 'rloo';

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Population standard deviation (the group is the whole population being normalised). */
export function populationStd(xs: readonly number[]): number {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) * (x - m), 0) / xs.length);
}

/**
 * grpo: (r - mean) / (std + eps); dr_grpo: r - mean (Dr. GRPO drops the std division);
 * rloo: r - mean of the others = n/(n-1) * (r - mean).
 */
export function groupAdvantages(rewards: readonly number[], estimator: Estimator, eps: number): number[] {
  const n = rewards.length;
  if (n === 0) return [];
  const m = mean(rewards);
  // Subtracting the mean of a constant group can leave float dust; a constant group has no signal.
  if (rewards.every((r) => r === rewards[0])) return rewards.map(() => 0);
  switch (estimator) {
    case 'grpo': {
      const s = populationStd(rewards);
      return rewards.map((r) => (r - m) / (s + eps));
    }
    case 'dr_grpo':
      return rewards.map((r) => r - m);
    case 'rloo':
      return n < 2 ? rewards.map(() => 0) : rewards.map((r) => ((r - m) * n) / (n - 1));
  }
}
