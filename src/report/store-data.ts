import { keys } from '../storage/keys.js';
import { readSpans } from '../storage/spans.js';
import type { ObjectStore } from '../storage/object-store.js';
import type { ReportData, SampleRollout } from './report-data.js';
import { spanToTurn } from './transcript.js';
import { rewardsFileSchema, type ScoredRolloutRecord } from '../contracts/rewards.js';
import { modelAliasSchema } from '../contracts/policy.js';

/** A transcript longer than this shows its first turns only; the rest are counted, not rendered. */
export const MAX_TURNS = 20;

/** The best and the worst scored rollout of an iteration (one when only one was scored, none when none was). */
export function pickSamples(
  rollouts: ScoredRolloutRecord[],
): { label: SampleRollout['label']; record: ScoredRolloutRecord }[] {
  const scored = rollouts.filter((r) => r.reward !== null);
  if (scored.length === 0) return [];
  // Stable order on ties: the earliest rollout id wins both ends, so the report is reproducible.
  const sorted = [...scored].sort((a, b) => b.reward! - a.reward! || a.rolloutId.localeCompare(b.rolloutId));
  const best = sorted[0]!;
  const worst = sorted.slice(1).sort((a, b) => a.reward! - b.reward! || a.rolloutId.localeCompare(b.rolloutId))[0];
  return worst
    ? [
        { label: 'best', record: best },
        { label: 'worst', record: worst },
      ]
    : [{ label: 'best', record: best }];
}

async function loadSample(
  store: ObjectStore,
  runId: string,
  iteration: number,
  label: SampleRollout['label'],
  r: ScoredRolloutRecord,
): Promise<SampleRollout> {
  const ref = { runId, iteration, rolloutId: r.rolloutId, attempt: r.attempt };
  const turns = [];
  let count = 0;
  for await (const span of readSpans(store, ref)) if (count++ < MAX_TURNS) turns.push(spanToTurn(span));
  return {
    label,
    rolloutId: r.rolloutId,
    attempt: r.attempt,
    taskId: r.taskId,
    outcome: r.outcome,
    reward: r.reward,
    turns,
    omittedTurns: Math.max(0, count - MAX_TURNS),
  };
}

/** What the object store knows about a run: base score, promoted checkpoint, sample rollouts of `lastIteration`. */
export async function readStoreData(
  store: ObjectStore,
  runId: string,
  lastIteration: number | null,
): Promise<Pick<ReportData, 'baseScore' | 'promoted' | 'samples'>> {
  const base = await store.getJsonOrNull(keys.evaluation(runId, 0, 'base'), rewardsFileSchema);
  const alias = await store.getJsonOrNull(keys.modelAlias(runId, 'best'), modelAliasSchema);
  let samples: ReportData['samples'] = null;
  if (lastIteration !== null) {
    const rewards = await store.getJsonOrNull(keys.rewards(runId, lastIteration), rewardsFileSchema);
    const rollouts = [];
    for (const { label, record } of pickSamples(rewards?.rollouts ?? []))
      rollouts.push(await loadSample(store, runId, lastIteration, label, record));
    samples = { iteration: lastIteration, rollouts };
  }
  return { baseScore: base?.meanReward ?? null, promoted: alias?.current ?? null, samples };
}
