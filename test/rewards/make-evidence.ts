import type { RolloutEvidence } from '../../src/rewards/types.js';
import { rolloutResult } from '../batches/scored-rollouts.js';

/** Evidence for one rollout with the given answer texts and extras, for reward tests. */
export function makeEvidence(
  o: Partial<Omit<RolloutEvidence, 'result'>> & { outputText?: string | null } = {},
): RolloutEvidence {
  const result = { ...rolloutResult('run1', 0, 'r1', 'g1'), outputText: o.outputText ?? null };
  return {
    result,
    lastAssistantMessage: o.lastAssistantMessage ?? null,
    workdir: o.workdir ?? null,
    agentRewards: o.agentRewards ?? [],
    completionTokens: o.completionTokens ?? 0,
    turns: o.turns ?? 0,
    snapshots: o.snapshots ?? {},
  };
}

export const ctx = { python: '.venv/bin/python', env: {} };
