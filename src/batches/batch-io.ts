import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Span } from '../contracts/span.js';
import type { ObjectStore } from '../storage/object-store.js';
import { keys, type RolloutRef } from '../storage/keys.js';
import { BatchFileWriter } from './batch-file.js';
import { buildBatch, type SpanSource } from './build-batch.js';
import type { BatchConfig } from './config.js';
import type { ScoredRollout } from './groups.js';
import type { BatchManifest } from './manifest.js';

type BatchStore = Pick<ObjectStore, 'list' | 'getJson' | 'putJson' | 'putFile'>;

/** Spans of one attempt straight from the store, in key (= seq) order, a few fetched ahead. */
export function storeSpanSource(store: Pick<ObjectStore, 'list' | 'getJson'>, readAhead = 8): SpanSource {
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
  bytes: number;
}

/** Build the batch into a local batch file (columns spilled to disk as samples stream past); returns its manifest. */
export async function buildBatchFile(
  file: string, scored: readonly ScoredRollout[], config: BatchConfig, spansOf: SpanSource, opts: { tmpDir?: string } = {},
): Promise<{ manifest: BatchManifest; bytes: number }> {
  const build = buildBatch(scored, spansOf, config);
  const writer = await BatchFileWriter.create(opts);
  try {
    for await (const row of build.samples) await writer.add(row);
  } catch (err) {
    await writer.discard();
    throw err;
  }
  const { bytes } = await writer.finish(file);
  return { manifest: build.manifest(), bytes };
}

/** Build the iteration's batch and upload samples.safetensors then manifest.json; re-running overwrites both. */
export async function writeBatch(
  store: BatchStore, runId: string, iteration: number, scored: readonly ScoredRollout[], config: BatchConfig, spansOf: SpanSource = storeSpanSource(store),
): Promise<WrittenBatch> {
  const samplesKey = keys.batch(runId, iteration);
  const manifestKey = keys.batchManifest(runId, iteration);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'volt-batch-'));
  try {
    const file = path.join(dir, 'samples.safetensors');
    const { manifest, bytes } = await buildBatchFile(file, scored, config, spansOf, { tmpDir: dir });
    await store.putFile(samplesKey, file);
    await store.putJson(manifestKey, manifest);
    return { samplesKey, manifestKey, manifest, bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
