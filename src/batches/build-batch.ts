import type { Span } from '../contracts/span.js';
import type { BatchBuildConfig } from './config.js';
import type { Estimator } from './advantages.js';
import { planGroups, type PlannedRollout, type ScoredRollout } from './groups.js';
import { ManifestBuilder } from './manifest.js';
import { toSampleRow } from './sample-row.js';
import { buildTrajectories, type Trajectory } from './trajectories.js';
import { perTurnAdvantages, turnReturns } from './turn-credit.js';
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

/** The spans of an attempt that are trained: side calls, excluded call kinds and untrained roles left out (counted). */
function spanFilter(config: BatchBuildConfig, manifest: ManifestBuilder): (recorded: Span[]) => Span[] {
  const excludedModel = modelFilter(config.excludeModels);
  const excludedKinds = new Set(config.excludeCallKinds);
  const roles = config.trainedRoles ? new Set(config.trainedRoles) : null;
  return (recorded) => {
    // Side calls leave the conversation they interrupt whole: the main calls around them still merge.
    const kept = excludedModel ? recorded.filter((s) => !excludedModel(s)) : recorded;
    const kinds = excludedKinds.size > 0 ? kept.filter((s) => !excludedKinds.has(s.callKind)) : kept;
    const spans = roles ? kinds.filter((s) => s.role !== null && roles.has(s.role)) : kinds;
    manifest.dropSpans('excluded_model', recorded.length - kept.length);
    manifest.dropSpans('excluded_call_kind', kept.length - kinds.length);
    manifest.dropSpans('excluded_role', kinds.length - spans.length);
    return spans;
  };
}

/** Scored rollouts + their spans → samples (streamed) and a manifest. Advantages come from rewards alone. */
export function buildBatch(
  scored: readonly ScoredRollout[],
  spansOf: SpanSource,
  config: BatchBuildConfig,
): BatchBuild {
  const plan = planGroups(scored, config);
  const manifest = new ManifestBuilder(config, plan, scored.length);
  const trained = spanFilter(config, manifest);
  const supervised = config.estimator === 'rejection_sampling';
  const perTurn = config.credit === 'per_turn' && !supervised;
  let done = false;

  /** One attempt's trajectories (one per call when per turn), counted into the manifest. */
  async function attempt(rollout: PlannedRollout) {
    const recorded = await collectAttempt(rollout.result.ref, spansOf(rollout.result.ref));
    const spans = trained(recorded);
    const built = buildTrajectories(spans, supervised, !perTurn);
    manifest.addAttempt(recorded.length, built);
    return { spans, built };
  }

  /** The rollout's rows with `advantageOf(k)` for its k-th trajectory; counts the rows and drops. */
  function* rows(rollout: PlannedRollout, trajectories: Trajectory[], advantageOf: (k: number) => number) {
    let index = 0;
    for (const [k, t] of trajectories.entries()) {
      const row = toSampleRow(t, { ...rollout, advantage: advantageOf(k) }, index, config);
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

  async function* broadcast(): AsyncGenerator<SampleRow> {
    for (const rollout of plan.rollouts) {
      const { built } = await attempt(rollout);
      yield* rows(rollout, built.trajectories, () => rollout.advantage);
    }
  }

  // Per turn, a group's rollouts are read together: each turn's baseline is the same turn of the others.
  async function* perTurnSamples(): AsyncGenerator<SampleRow> {
    for (const group of groupsOf(plan.rollouts)) {
      const members = [];
      for (const rollout of group) {
        const { spans, built } = await attempt(rollout);
        const seqOf = new Map(spans.map((s) => [s.spanId, s.seq]));
        const seqs = built.trajectories.map((t) => seqOf.get(t.spanIds[0]!)!);
        members.push({
          rollout,
          built,
          returns: turnReturns(seqs, rollout.outcomeReward, rollout.turnRewards, config.gamma),
        });
      }
      const advantages = perTurnAdvantages(
        members.map((m) => m.returns),
        config.estimator as Estimator,
        config.eps,
        config.minGroupSize,
      );
      for (const [i, m] of members.entries()) yield* rows(m.rollout, m.built.trajectories, (k) => advantages[i]![k]!);
    }
  }

  async function* samples(): AsyncGenerator<SampleRow> {
    yield* perTurn ? perTurnSamples() : broadcast();
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

/** Planned rollouts by group, in plan order (a group's rollouts are contiguous there). */
function groupsOf(rollouts: readonly PlannedRollout[]): PlannedRollout[][] {
  const groups = new Map<string, PlannedRollout[]>();
  for (const r of rollouts) {
    if (!groups.has(r.result.groupId)) groups.set(r.result.groupId, []);
    groups.get(r.result.groupId)!.push(r);
  }
  return [...groups.values()];
}
