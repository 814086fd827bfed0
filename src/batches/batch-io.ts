import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Span } from '../contracts/span.js';
import type { ObjectStore } from '../storage/object-store.js';
import { keys } from '../storage/keys.js';
import { readSpans, type SpanStore } from '../storage/spans.js';
import { BatchFileWriter } from './batch-file.js';
import { buildBatch, type SpanSource } from './build-batch.js';
import { objectiveOf, type BatchBuildConfig } from './config.js';
import type { ScoredRollout } from './groups.js';
import type { RolloutRef } from '../contracts/rollout.js';
import { batchManifestSchema, type BatchManifest } from '../contracts/batch-manifest.js';

type BatchStore = Pick<ObjectStore, 'list' | 'getBytes' | 'getJson' | 'putJson' | 'putFile'>;

/** Spans of one attempt straight from the store, in seq order (single-span objects and segments alike). */
export function storeSpanSource(store: SpanStore): SpanSource {
  return (ref: RolloutRef): AsyncGenerator<Span> => readSpans(store, ref);
}

export interface WrittenBatch {
  samplesKey: string;
  manifestKey: string;
  manifest: BatchManifest;
  bytes: number;
}

/** Build the batch into a local batch file (columns spilled to disk as samples stream past); returns its manifest. */
export async function buildBatchFile(
  file: string,
  scored: readonly ScoredRollout[],
  config: BatchBuildConfig,
  spansOf: SpanSource,
  opts: { tmpDir?: string } = {},
): Promise<{ manifest: BatchManifest; bytes: number }> {
  const build = buildBatch(scored, spansOf, config);
  const writer = await BatchFileWriter.create(opts);
  try {
    for await (const row of build.samples) await writer.add(row);
  } catch (err) {
    await writer.discard();
    throw err;
  }
  const { bytes } = await writer.finish(file, build.lossScale, objectiveOf(config));
  return { manifest: build.manifest(), bytes };
}

/** Build the iteration's batch and upload samples.safetensors then manifest.json; re-running overwrites both. */
export async function writeBatch(
  store: BatchStore,
  runId: string,
  iteration: number,
  scored: readonly ScoredRollout[],
  config: BatchBuildConfig,
  spansOf: SpanSource = storeSpanSource(store),
  role?: string,
): Promise<WrittenBatch> {
  const samplesKey = keys.batch(runId, iteration, role);
  const manifestKey = keys.batchManifest(runId, iteration, role);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'volt-batch-'));
  try {
    const file = path.join(dir, 'samples.safetensors');
    const { manifest, bytes } = await buildBatchFile(file, scored, config, spansOf, { tmpDir: dir });
    await store.putFile(samplesKey, file);
    await store.putJson(manifestKey, manifest, batchManifestSchema);
    return { samplesKey, manifestKey, manifest, bytes };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
