import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { batchManifestSchema, type BatchManifest } from '../contracts/batch-manifest.js';
import { rewardsFileSchema, type ScoredRolloutRecord } from '../contracts/rewards.js';
import type { ModelAlias } from '../contracts/policy.js';
import type { Span } from '../contracts/span.js';
import { apoCurveData, gatherApoReport, isPromptOptimization, type ApoReportData } from '../report/apo-report.js';
import { curveData, type CurveData } from '../report/curve-data.js';
import { gatherReport } from '../report/gather.js';
import type { ReportData } from '../report/report-data.js';
import { readRunData } from '../report/run-source.js';
import { readRunAlias } from '../serving/run-alias.js';
import { keys, UnsafeIdError, assertId } from '../storage/keys.js';
import type { ObjectStore } from '../storage/object-store.js';
import { readSpans } from '../storage/spans.js';
import { BestScoreKey, IterationKey, PhaseKey, statusQuery } from '../workflows/definitions.js';

/** A page asked for something that does not exist (or an id that could not name anything): the server's 404. */
export class NotFoundError extends Error {}

const ScheduledByKey = defineSearchAttributeKey('TemporalScheduledById', SearchAttributeType.KEYWORD);
const RUN_TYPES = ['trainingRun', 'promptOptimization'] as const;
/** The runs page lists at most this many runs (newest first), from Temporal's visibility store. */
export const MAX_RUNS = 1000;

export interface RunRow {
  runId: string;
  type: (typeof RUN_TYPES)[number];
  /** Temporal's status name of the latest execution. */
  state: string;
  phase: string | null;
  iteration: number | null;
  bestScore: number | null;
  startedAt: string;
  closedAt: string | null;
  /** The schedule that started it (nightly retraining), if one did. */
  scheduleId: string | null;
}

/** Every training and prompt-optimisation run Temporal knows, newest first, one row per run id. */
export async function listRuns(client: Client): Promise<RunRow[]> {
  const rows = new Map<string, RunRow>();
  const query = `WorkflowType IN (${RUN_TYPES.map((t) => `'${t}'`).join(', ')})`;
  for await (const wf of client.workflow.list({ query })) {
    const attrs = wf.typedSearchAttributes;
    const row: RunRow = {
      runId: wf.workflowId,
      type: wf.type as RunRow['type'],
      state: wf.status.name,
      phase: attrs.get(PhaseKey) ?? null,
      iteration: attrs.get(IterationKey) ?? null,
      bestScore: attrs.get(BestScoreKey) ?? null,
      startedAt: wf.startTime.toISOString(),
      closedAt: wf.closeTime?.toISOString() ?? null,
      scheduleId: attrs.get(ScheduledByKey) ?? null,
    };
    // After continue-as-new a run has several executions: the one that did not continue describes it, the first
    // one's start is the run's start.
    const seen = rows.get(wf.workflowId);
    if (!seen) {
      if (rows.size >= MAX_RUNS) break;
      rows.set(wf.workflowId, row);
      continue;
    }
    const startedAt = seen.startedAt < row.startedAt ? seen.startedAt : row.startedAt;
    if (seen.state === 'CONTINUED_AS_NEW' && row.state !== 'CONTINUED_AS_NEW') Object.assign(seen, row);
    seen.startedAt = startedAt;
  }
  return [...rows.values()];
}

/** A validated id or a 404: ids come from the URL and name storage keys (src/storage/keys.ts). */
export function idOrNotFound(kind: string, value: string): string {
  try {
    return assertId(kind, value);
  } catch (err) {
    if (err instanceof UnsafeIdError) throw new NotFoundError(`no ${kind} ${JSON.stringify(value)}: ${err.message}`);
    throw err;
  }
}

export function iterationOrNotFound(value: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new NotFoundError(`no iteration ${JSON.stringify(value)}`);
  return Number(value);
}

const readManifest = (store: ObjectStore, runId: string, iteration: number) =>
  store.getJsonOrNull(keys.batchManifest(runId, iteration), batchManifestSchema).catch(() => null);

const notFoundRun = (runId: string) => (err: unknown) => {
  if (err instanceof WorkflowNotFoundError) throw new NotFoundError(`no run ${runId}`);
  throw err;
};

/** A run's page data; `manifests`: each history iteration's batch manifest (null where none was built). */
export type RunView =
  | {
      kind: 'training';
      report: ReportData;
      manifests: (BatchManifest | null)[];
      /** The run's `best` alias: every promotion and rollback, oldest first; null before the first promotion. */
      alias: ModelAlias | null;
    }
  | { kind: 'apo'; report: ApoReportData };

export async function runView(client: Client, store: ObjectStore, runId: string): Promise<RunView> {
  idOrNotFound('run', runId);
  // describe first: an unknown run is a 404, not the report's error.
  await client.workflow.getHandle(runId).describe().catch(notFoundRun(runId));
  if (await isPromptOptimization(client, runId))
    return { kind: 'apo', report: await gatherApoReport(client, store, runId) };
  const report = await gatherReport(client, store, runId);
  const manifests = await Promise.all(report.status.history.map((h) => readManifest(store, runId, h.iteration)));
  return { kind: 'training', report, manifests, alias: await readRunAlias(store, runId) };
}

/**
 * What the run page's chart polls (every few seconds while a run goes): the status query and the base score only, not
 * the history, manifests and sample spans the page itself reads.
 */
export async function curveView(
  client: Client,
  store: ObjectStore,
  runId: string,
): Promise<{ running: boolean; curve: CurveData }> {
  idOrNotFound('run', runId);
  const desc = await client.workflow.getHandle(runId).describe().catch(notFoundRun(runId));
  const running = desc.status.name === 'RUNNING';
  if (desc.type === 'promptOptimization')
    return { running, curve: apoCurveData(await gatherApoReport(client, store, runId)) };
  const status = running
    ? await client.workflow.getHandle(runId).query(statusQuery)
    : (await readRunData(client, runId)).status;
  const base = await store.getJsonOrNull(keys.evaluation(runId, 0, 'base'), rewardsFileSchema);
  return { running, curve: curveData({ runId, status, baseScore: base?.meanReward ?? null }) };
}

/** Reward spread of one group and why it gave no samples when it gave none (the batch builder's rules). */
export interface GroupRow {
  groupId: string;
  rollouts: number;
  scored: number;
  mean: number | null;
  min: number | null;
  max: number | null;
  samples: boolean;
  why: string | null;
}

/** The training rollouts of an iteration; any other name is one of its evaluations (keys.evaluation: base, candidate, …). */
export const TRAIN_SET = 'train';

export interface IterationView {
  runId: string;
  iteration: number;
  /** TRAIN_SET, or the label of an evaluation of this iteration (its held-out rollouts: scored, never trained). */
  set: string;
  /** The labels of this iteration's stored evaluations (each a page of its rollouts). */
  evalSets: string[];
  rollouts: ScoredRolloutRecord[];
  groups: GroupRow[];
  manifest: BatchManifest | null;
  /** Rollout ids that gave a training sample (the manifest's span → sample lineage). */
  trained: Set<string>;
}

export function groupRows(
  rollouts: ScoredRolloutRecord[],
  manifest: BatchManifest | null,
  trained: Set<string>,
  evaluation = false,
): GroupRow[] {
  const byGroup = new Map<string, ScoredRolloutRecord[]>();
  for (const r of rollouts) byGroup.set(r.groupId, [...(byGroup.get(r.groupId) ?? []), r]);
  const minGroupSize = Number(manifest?.config.minGroupSize ?? 2);
  // A rejection-sampling (SFT) batch keeps rollouts by reward alone: groups and their variance play no part.
  const sft = manifest?.config.estimator === 'rejection_sampling';
  const threshold = Number(manifest?.config.rejectionThreshold ?? 1);
  return [...byGroup.entries()].map(([groupId, rs]) => {
    const rewards = rs.map((r) => r.reward).filter((x): x is number => x !== null);
    const mean = rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null;
    const min = rewards.length ? Math.min(...rewards) : null;
    const max = rewards.length ? Math.max(...rewards) : null;
    const samples = rs.some((r) => trained.has(r.rolloutId));
    let why: string | null = null;
    if (samples) why = null;
    else if (evaluation) why = 'held-out evaluation: scored, never trained';
    else if (!manifest) why = 'no batch was built for this iteration';
    else if (rewards.length === 0) why = 'no rollout was scored (infra failures or reward errors)';
    else if (sft && max! < threshold) why = `SFT iteration: no rollout reached batch.rejectionThreshold ${threshold}`;
    else if (!sft && rewards.length < minGroupSize)
      why = `group too small: ${rewards.length} scored, batch.minGroupSize ${minGroupSize}`;
    else if (!sft && min === max) why = `zero variance: every scored rollout got ${min}`;
    else why = 'every sample dropped (see the manifest drops)';
    return { groupId, rollouts: rs.length, scored: rewards.length, mean, min, max, samples, why };
  });
}

/** The rollout a sample came from: sample ids are `<rolloutId>.a<attempt>.s<index>` (src/batches/sample-row.ts). */
export function sampleRolloutId(sampleId: string): string | null {
  return /^(.+)\.a\d+\.s\d+$/.exec(sampleId)?.[1] ?? null;
}

/** Rollout ids that gave at least one training sample, from the manifest's span → sample lineage. */
export function trainedRollouts(manifest: BatchManifest | null): Set<string> {
  const out = new Set<string>();
  for (const sampleId of Object.values(manifest?.lineage ?? {})) {
    const r = sampleRolloutId(sampleId);
    if (r) out.add(r);
  }
  return out;
}

/** The labels of an iteration's stored evaluations, from the object store's listing of its eval/ folder. */
export async function evaluationLabels(store: ObjectStore, runId: string, iteration: number): Promise<string[]> {
  const prefix = `${keys.iteration(runId, iteration)}eval/`;
  const labels: string[] = [];
  for await (const { key } of store.list(prefix)) {
    const label = /^([^/]+)\.json$/.exec(key.slice(prefix.length))?.[1];
    if (label) labels.push(label);
  }
  return labels.sort();
}

/** The scored rollouts of one set of an iteration: its training rollouts, or one evaluation's. */
async function setRollouts(store: ObjectStore, runId: string, iteration: number, set: string) {
  const label = set === TRAIN_SET ? set : idOrNotFound('evaluation', set);
  const key = label === TRAIN_SET ? keys.rewards(runId, iteration) : keys.evaluation(runId, iteration, label);
  const rewards = await store.getJsonOrNull(key, rewardsFileSchema);
  if (!rewards)
    throw new NotFoundError(
      `run ${runId} has no ${label === TRAIN_SET ? 'scored iteration' : `evaluation ${label} in iteration`} ${iteration}`,
    );
  return rewards.rollouts;
}

export async function iterationView(
  store: ObjectStore,
  runId: string,
  iterationParam: string,
  set = TRAIN_SET,
): Promise<IterationView> {
  idOrNotFound('run', runId);
  const iteration = iterationOrNotFound(iterationParam);
  const rollouts = await setRollouts(store, runId, iteration, set);
  const evaluation = set !== TRAIN_SET;
  const manifest = evaluation ? null : await readManifest(store, runId, iteration);
  const trained = trainedRollouts(manifest);
  return {
    runId,
    iteration,
    set,
    evalSets: await evaluationLabels(store, runId, iteration),
    rollouts,
    groups: groupRows(rollouts, manifest, trained, evaluation),
    manifest,
    trained,
  };
}

export interface RolloutView {
  runId: string;
  iteration: number;
  set: string;
  record: ScoredRolloutRecord;
  spans: Span[];
  /** Span ids that went into a training sample (their completion tokens are the trained ones). */
  trainedSpans: Set<string>;
  stdout: string | null;
  stderr: string | null;
}

/** Logs are shown up to this many bytes (their tail). */
export const LOG_TAIL_BYTES = 64 * 1024;

async function tail(store: ObjectStore, key: string): Promise<string | null> {
  const info = await store.stat(key);
  if (!info) return null;
  const bytes = await store.getBytes(key);
  return bytes.subarray(Math.max(0, bytes.length - LOG_TAIL_BYTES)).toString('utf8');
}

export async function rolloutView(
  store: ObjectStore,
  runId: string,
  iterationParam: string,
  rolloutIdParam: string,
  set = TRAIN_SET,
): Promise<RolloutView> {
  idOrNotFound('run', runId);
  const rolloutId = idOrNotFound('rollout', rolloutIdParam);
  const iteration = iterationOrNotFound(iterationParam);
  const record = (await setRollouts(store, runId, iteration, set)).find((r) => r.rolloutId === rolloutId);
  if (!record)
    throw new NotFoundError(
      `run ${runId} iteration ${iteration}${set === TRAIN_SET ? '' : ` evaluation ${set}`} has no rollout ${rolloutId}`,
    );
  const ref = { runId, iteration, rolloutId, attempt: record.attempt };
  const spans: Span[] = [];
  for await (const span of readSpans(store, ref)) spans.push(span);
  const lineage = set === TRAIN_SET ? ((await readManifest(store, runId, iteration))?.lineage ?? {}) : {};
  return {
    runId,
    iteration,
    set,
    record,
    spans,
    trainedSpans: new Set(spans.map((s) => s.spanId).filter((id) => id in lineage)),
    stdout: await tail(store, keys.rolloutLog(ref, 'stdout')),
    stderr: await tail(store, keys.rolloutLog(ref, 'stderr')),
  };
}
