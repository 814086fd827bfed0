import type { RolloutOutcome, RolloutResult } from '../../src/contracts/rollout.js';
import type { ScoredRollout } from '../../src/batches/groups.js';

/** A rollout result as a runner reports it, for batch tests. */
export function rolloutResult(
  runId: string,
  iteration: number,
  rolloutId: string,
  groupId: string,
  outcome: RolloutOutcome = 'succeeded',
  attempt = 0,
): RolloutResult {
  const ref = { runId, iteration, rolloutId, attempt };
  return {
    ref,
    taskId: `task-${groupId}`,
    groupId,
    mode: 'train',
    outcome,
    exitCode: outcome === 'succeeded' ? 0 : 1,
    signal: null,
    durationMs: 10,
    outputText: null,
    stdoutKey: `stdout/${rolloutId}`,
    stderrKey: `stderr/${rolloutId}`,
    detail: null,
  };
}

/** `groups[g][i]` is the reward of rollout i of group g (null: reward infra failure). */
export function scoredGroups(runId: string, iteration: number, groups: (number | null)[][]): ScoredRollout[] {
  return groups.flatMap((rewards, g) =>
    rewards.map((reward, i) => ({ result: rolloutResult(runId, iteration, `g${g}-r${i}`, `g${g}`), reward })),
  );
}
