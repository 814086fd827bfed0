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
  /** Factor on the loss (batch.lossNormalizer), known before any sample is read. */
  lossScale: number;
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

/** batch.excludeModels as one test: exact names, `*` any run of characters. */
function modelFilter(patterns: readonly string[]): ((span: Span) => boolean) | null {
  if (patterns.length === 0) return null;
  const escape = (p: string) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*');
  const re = new RegExp(`^(?:${patterns.map(escape).join('|')})$`);
  return (span) => {
    const model = span.requestedModel;
    return model !== null && re.test(model);
  };
}

/** Scored rollouts + their spans → samples (streamed) and a manifest. Advantages come from rewards alone. */
export function buildBatch(scored: readonly ScoredRollout[], spansOf: SpanSource, config: BatchConfig): BatchBuild {
  const plan = planGroups(scored, config);
  const manifest = new ManifestBuilder(config, plan, scored.length);
  const excludedModel = modelFilter(config.excludeModels);
  const excludedKinds = new Set(config.excludeCallKinds);
  const supervised = config.estimator === 'rejection_sampling';
  let done = false;
  async function* samples(): AsyncGenerator<SampleRow> {
    for (const rollout of plan.rollouts) {
      const recorded = await collectAttempt(rollout.result.ref, spansOf(rollout.result.ref));
      // Side calls leave the conversation they interrupt whole: the main calls around them still merge.
      const kept = excludedModel ? recorded.filter((s) => !excludedModel(s)) : recorded;
      const spans = excludedKinds.size > 0 ? kept.filter((s) => !excludedKinds.has(s.callKind)) : kept;
      const built = buildTrajectories(spans, supervised);
      manifest.addAttempt(recorded.length, built);
      manifest.dropSpans('excluded_model', recorded.length - kept.length);
      manifest.dropSpans('excluded_call_kind', kept.length - spans.length);
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
    lossScale: plan.lossScale,
    manifest: () => {
      if (!done) throw new Error('batch manifest requested before all samples were consumed');
      return manifest.finish();
    },
  };
}
