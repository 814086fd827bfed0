import type { Span } from '../contracts/span.js';
import type { ObjectStore } from '../storage/object-store.js';
import { keys, type RolloutRef } from '../storage/keys.js';
import { buildBatch, type SpanSource } from './build-batch.js';
import type { BatchConfig } from './config.js';
import type { ScoredRollout } from './groups.js';
import type { BatchManifest } from './manifest.js';

type BatchStore = Pick<ObjectStore, 'list' | 'getJson' | 'putJson' | 'putJsonl'>;

/** Spans of one attempt straight from the store, in key (= seq) order, a few fetched ahead. */
export function storeSpanSource(store: BatchStore, readAhead = 8): SpanSource {
  return async function* (ref: RolloutRef): AsyncGenerator<Span> {
    const pending: Promise<Span>[] = [];
    for await (const o of store.list(keys.spans(ref))) {
      const next = store.getJson<Span>(o.key);
      // Handled when awaited in turn; this only keeps an early failure from counting as unhandled.
      next.catch(() => undefined);
      pending.push(next);
      if (pending.length >= readAhead) yield await pending.shift()!;
    }
    while (pending.length > 0) yield await pending.shift()!;
  };
}

export interface WrittenBatch {
  samplesKey: string;
  manifestKey: string;
  manifest: BatchManifest;
}

/** Build the iteration's batch and write samples.jsonl (streamed) then manifest.json; re-running overwrites both. */
export async function writeBatch(
  store: BatchStore, runId: string, iteration: number, scored: readonly ScoredRollout[], config: BatchConfig, spansOf: SpanSource = storeSpanSource(store),
): Promise<WrittenBatch> {
  const build = buildBatch(scored, spansOf, config);
  const samplesKey = keys.batch(runId, iteration);
  const manifestKey = keys.batchManifest(runId, iteration);
  await store.putJsonl(samplesKey, build.samples);
  const manifest = build.manifest();
  await store.putJson(manifestKey, manifest);
  return { samplesKey, manifestKey, manifest };
}
