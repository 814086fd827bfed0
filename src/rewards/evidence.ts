import type { RolloutResult } from '../contracts/rollout.js';
import type { Span } from '../contracts/span.js';
import type { ObjectStore } from '../storage/object-store.js';
import { keys } from '../storage/keys.js';
import { readSpans } from '../storage/spans.js';
import type { RolloutEvidence } from './types.js';
import type { ProtectedSnapshot } from '../contracts/rollout-outcome.js';
import { agentRewardsFileSchema } from '../contracts/rewards.js';

type EvidenceStore = Pick<ObjectStore, 'list' | 'getBytes' | 'getJsonOrNull'>;

/** Text of choice 0 of the last ok span: the assistant's final message as the agent received it. */
export function lastAssistantMessage(spans: readonly Span[]): string | null {
  for (let i = spans.length - 1; i >= 0; i--) {
    const span = spans[i]!;
    if (span.status !== 'ok') continue;
    const choice = span.choices.find((c) => c.index === 0) ?? span.choices[0];
    if (choice) return choice.text;
  }
  return null;
}

/** Evidence from spans already in hand (pure). */
export function evidenceFromSpans(
  result: RolloutResult,
  spans: readonly Span[],
  extra: {
    workdir: string | null;
    snapshots?: Record<string, ProtectedSnapshot>;
    agentRewards?: RolloutEvidence['agentRewards'];
  },
): RolloutEvidence {
  const ok = spans.filter((s) => s.status === 'ok');
  const completionTokens = ok.reduce(
    (n, s) => n + (s.usage?.completion_tokens ?? s.choices[0]?.tokenIds?.length ?? 0),
    0,
  );
  return {
    result,
    lastAssistantMessage: lastAssistantMessage(spans),
    assistantTexts: ok.map((s) => (s.choices.find((c) => c.index === 0) ?? s.choices[0])?.text ?? ''),
    workdir: extra.workdir,
    agentRewards: extra.agentRewards ?? [],
    completionTokens,
    turns: ok.length,
    snapshots: extra.snapshots ?? {},
  };
}

/** Read a rollout attempt's spans and agent-posted rewards from the store and assemble its evidence. */
export async function loadEvidence(
  store: EvidenceStore,
  result: RolloutResult,
  extra: { workdir: string | null; snapshots?: Record<string, ProtectedSnapshot> },
): Promise<RolloutEvidence> {
  const spans: Span[] = [];
  for await (const span of readSpans(store, result.ref)) spans.push(span);
  const posted = await store.getJsonOrNull(keys.agentRewards(result.ref), agentRewardsFileSchema);
  const agentRewards = (posted?.rewards ?? []).map((r) => ({
    ...(r.name && { name: r.name }),
    value: r.value,
    ...(typeof r.span === 'number' && { span: r.span }),
  }));
  return evidenceFromSpans(result, spans, { ...extra, agentRewards });
}
