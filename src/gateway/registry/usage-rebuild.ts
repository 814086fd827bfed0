import { parseSpanKey, readSpans, spanOfStoredLine, type SpanStore } from '../../storage/spans.js';
import { keys } from '../../storage/keys.js';
import type { Rollout } from './rollout-registry.js';
import type { WalEntry } from '../recording/wal.js';
import { entryRef, readEntries } from '../recording/wal-segment.js';

/**
 * A budgeted rollout's usage as its recorded calls say: every admitted call leaves exactly one span (answered,
 * failed upstream or cut off), so calls = its spans, and completion tokens = the sum of their usage. Read at start
 * from the WAL a crashed process left and from the store, because the registry file is written with other updates
 * only and may predate the last calls. Counters only grow: the larger of the file's and the spans' count is kept.
 */
export async function rebuildUsage(rollout: Rollout, replay: readonly WalEntry[], store: SpanStore): Promise<void> {
  if (!rollout.record.budget) return;
  const prefix = keys.spans(rollout.ref);
  const tokensBySeq = new Map<number, number>();
  for (const entry of replay) {
    const seq = entry.key.startsWith(prefix) ? parseSpanKey(entry.key)?.first : undefined;
    if (seq === undefined || tokensBySeq.has(seq)) continue;
    const span = spanOfStoredLine(entry.json ?? readEntries([entryRef(entry)])[0]!) as {
      usage?: { completion_tokens?: unknown } | null;
    };
    tokensBySeq.set(seq, completionTokens(span.usage));
  }
  for await (const span of readSpans(store, rollout.ref)) {
    if (!tokensBySeq.has(span.seq)) tokensBySeq.set(span.seq, completionTokens(span.usage));
  }
  let tokens = 0;
  for (const n of tokensBySeq.values()) tokens += n;
  const usage = rollout.record.usage;
  usage.calls = Math.max(usage.calls, tokensBySeq.size);
  usage.completionTokens = Math.max(usage.completionTokens, tokens);
}

function completionTokens(usage: { completion_tokens?: unknown } | null | undefined): number {
  const n = usage?.completion_tokens;
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}
