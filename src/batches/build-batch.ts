import type { Span } from '../contracts/span.js';
import type { BatchConfig } from './config.js';
import { planGroups, type ScoredRollout } from './groups.js';
import { ManifestBuilder } from './manifest.js';
import { toSampleRow } from './sample-row.js';
import { buildTrajectories } from './trajectories.js';
import type { RolloutRef } from '../contracts/rollout.js';
import type { BatchManifest } from '../contracts/batch-manifest.js';
import type { SampleRow } from '../contracts/sample.js';

/** Where the builder gets one rollout attempt's spans (e.g. a prefix listing in the object store). */
export type SpanSource = (ref: RolloutRef) => AsyncIterable<Span> | Iterable<Span>;

export interface BatchBuild {
  /** Samples in group order; spans are read one rollout attempt at a time, so memory stays bounded. */
  samples: AsyncIterable<SampleRow>;
  /** Valid once `samples` has been consumed to the end. */
  manifest(): BatchManifest;
}

async function collectAttempt(ref: RolloutRef, source: AsyncIterable<Span> | Iterable<Span>): Promise<Span[]> {
  const spans: Span[] = [];
  // A plain loop for in-memory sources: an await per span would cost more than building the span's transition.
  const iterable: Iterable<Span> | AsyncIterable<Span> = source;
  const check = (s: Span) => {
    if (s.rolloutId !== ref.rolloutId || s.attempt !== ref.attempt) {
      throw new Error(
        `span ${s.spanId} belongs to ${s.rolloutId}/${s.attempt}, listed under ${ref.rolloutId}/${ref.attempt}`,
      );
    }
    spans.push(s);
  };
  if (Symbol.iterator in iterable) for (const s of iterable) check(s);
  else for await (const s of iterable) check(s);
  return spans.sort((a, b) => a.seq - b.seq);
}

/** Scored rollouts + their spans → samples (streamed) and a manifest. Advantages come from rewards alone. */
export function buildBatch(scored: readonly ScoredRollout[], spansOf: SpanSource, config: BatchConfig): BatchBuild {
  const plan = planGroups(scored, config);
  const manifest = new ManifestBuilder(config, plan, scored.length);
  let done = false;
  async function* samples(): AsyncGenerator<SampleRow> {
    for (const rollout of plan.rollouts) {
      const spans = await collectAttempt(rollout.result.ref, spansOf(rollout.result.ref));
      const built = buildTrajectories(spans);
      manifest.addAttempt(spans.length, built);
      let index = 0;
      for (const t of built.trajectories) {
        const row = toSampleRow(t, rollout, index, config);
        if (typeof row === 'string') {
          manifest.dropSample(row);
          continue;
        }
        index += 1;
        manifest.addSample(row);
        yield row;
      }
      if (index === 0) manifest.rolloutWithoutSamples();
    }
    done = true;
  }
  return {
    samples: samples(),
    manifest: () => {
      if (!done) throw new Error('batch manifest requested before all samples were consumed');
      return manifest.finish();
    },
  };
}
