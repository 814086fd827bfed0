import type { ScoredRolloutRecord } from '../contracts/rewards.js';

/** A score's numerator and denominators: score = rewardSum / scored, over `tasks` rollouts. */
export interface ScoreCounts {
  rewardSum: number;
  scored: number;
  tasks: number;
}

/** Score counts per task kind (kinds in name order); null when no rollout's task has a kind. */
export function countsByKind(
  rollouts: readonly Pick<ScoredRolloutRecord, 'taskKind' | 'reward'>[],
): Record<string, ScoreCounts> | null {
  if (!rollouts.some((r) => r.taskKind)) return null;
  const byKind = new Map<string, ScoreCounts>();
  for (const r of rollouts) {
    const kind = r.taskKind || '(none)';
    const c = byKind.get(kind) ?? { rewardSum: 0, scored: 0, tasks: 0 };
    c.tasks += 1;
    if (r.reward !== null) {
      c.scored += 1;
      c.rewardSum += r.reward;
    }
    byKind.set(kind, c);
  }
  return Object.fromEntries([...byKind].sort(([a], [b]) => a.localeCompare(b)));
}

/** "plain 0.750 (21/28), word 0.091 (2/22)": each kind's mean over its scored rollouts, with its counts. */
export function formatByKind(byKind: Record<string, ScoreCounts>): string {
  return Object.entries(byKind)
    .map(
      ([kind, c]) =>
        `${kind} ${c.scored ? (c.rewardSum / c.scored).toFixed(3) : '-'} (${c.rewardSum.toFixed(c.rewardSum % 1 ? 2 : 0)}/${c.scored}${c.scored === c.tasks ? '' : ` scored of ${c.tasks}`})`,
    )
    .join(', ');
}
