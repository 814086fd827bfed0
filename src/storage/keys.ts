import type { RolloutRef } from '../contracts/rollout.js';
import { isSafeId, SAFE_ID_RULE } from '../contracts/safe-id.js';

export class UnsafeIdError extends Error {
  constructor(kind: string, value: unknown, rule = SAFE_ID_RULE) {
    super(`unsafe ${kind} id ${JSON.stringify(value)}: ${rule}`);
    this.name = 'UnsafeIdError';
  }
}

export function assertId(kind: string, value: unknown): string {
  if (!isSafeId(value)) throw new UnsafeIdError(kind, value);
  return value;
}

function assertIndex(kind: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new UnsafeIdError(kind, value, 'expected a non-negative integer');
  return value;
}

export class UnsafeKeyError extends Error {
  constructor(value: unknown) {
    super(`unsafe object key ${JSON.stringify(value)}: use relative '/'-separated segments, none empty, '.' or '..'`);
    this.name = 'UnsafeKeyError';
  }
}

/** A full key or prefix as the store accepts it: relative, no empty or '.'/'..' segments, no control characters. */
export function assertKey(value: unknown, { prefix = false } = {}): string {
  const ok =
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= 1024 &&
    !value.startsWith('/') &&
    !/[\p{Cc}\\]/u.test(value) &&
    value
      .split('/')
      .every((seg, i, all) => (seg !== '' || (prefix && i === all.length - 1)) && seg !== '.' && seg !== '..');
  if (!ok) throw new UnsafeKeyError(value);
  return value;
}

/** A lowercase hex sha256 digest, the id of content-addressed objects. */
export function assertSha256(kind: string, value: unknown): string {
  if (typeof value !== 'string' || !/^[0-9a-f]{64}$/.test(value))
    throw new UnsafeIdError(`${kind} sha256`, value, 'expected 64 lowercase hex digits');
  return value;
}

const pad = (n: number, width = 6) => String(n).padStart(width, '0');

/** The name of a spans segment under an attempt's spans prefix (keys.spanSegment). */
export const spanSegmentName = (firstSeq: number, lastSeq: number) =>
  `${pad(assertIndex('seq', firstSeq), 8)}-${pad(assertIndex('seq', lastSeq), 8)}.jsonl`;

/**
 * The object-store key layout. This is the only file that knows it; every key is built from ids that
 * passed `assertId`, so no user string can climb out of its prefix.
 */
export const keys = {
  run: (runId: string) => `runs/${assertId('run', runId)}/`,
  iteration: (runId: string, iteration: number) =>
    `${keys.run(runId)}iterations/${pad(assertIndex('iteration', iteration))}/`,
  rollout: (r: RolloutRef) =>
    `${keys.iteration(r.runId, r.iteration)}rollouts/${assertId('rollout', r.rolloutId)}/attempt-${pad(assertIndex('attempt', r.attempt), 3)}/`,
  /** All attempts of one rollout; `rolloutOutcome` is written once the rollout has its final attempt. */
  rolloutAttempts: (runId: string, iteration: number, rolloutId: string) =>
    `${keys.iteration(runId, iteration)}rollouts/${assertId('rollout', rolloutId)}/`,
  rolloutOutcome: (runId: string, iteration: number, rolloutId: string) =>
    `${keys.rolloutAttempts(runId, iteration, rolloutId)}outcome.json`,
  rolloutStarted: (r: RolloutRef) => `${keys.rollout(r)}started.json`,
  rolloutResult: (r: RolloutRef) => `${keys.rollout(r)}result.json`,
  rolloutLog: (r: RolloutRef, stream: 'stdout' | 'stderr') => `${keys.rollout(r)}${stream}.log`,
  /** Spans sort by sequence number within a rollout attempt, so a prefix listing is already in order. */
  spans: (r: RolloutRef) => `${keys.rollout(r)}spans/`,
  span: (r: RolloutRef, seq: number) => `${keys.spans(r)}${pad(assertIndex('seq', seq), 8)}.json`,
  /** Spans first..last of one attempt as JSON Lines, one span per line; read both layouts with src/storage/spans.ts. */
  spanSegment: (r: RolloutRef, firstSeq: number, lastSeq: number) =>
    `${keys.spans(r)}${spanSegmentName(firstSeq, lastSeq)}`,
  agentRewards: (r: RolloutRef) => `${keys.rollout(r)}agent-rewards.json`,
  /** The attempt's gateway registration, shared by every gateway replica (src/gateway/registry/shared-rollouts.ts). */
  gatewayRollout: (r: RolloutRef) => `${keys.rollout(r)}gateway/rollout.json`,
  /** What one gateway replica counted for the attempt (model-side failures, budget refusal); summed at close. */
  gatewayReplicas: (r: RolloutRef) => `${keys.rollout(r)}gateway/replicas/`,
  gatewayReplica: (r: RolloutRef, replicaId: string) =>
    `${keys.gatewayReplicas(r)}${assertId('replica', replicaId)}.json`,
  /** Claims of span seq numbers by gateway replicas (src/gateway/registry/seq-claims.ts); names sort by seq. */
  seqClaims: (r: RolloutRef) => `${keys.rollout(r)}gateway/seq-claims/`,
  seqClaim: (r: RolloutRef, seq: number, claimId: string) =>
    `${keys.seqClaims(r)}${pad(assertIndex('seq', seq), 8)}.${assertId('claim', claimId)}`,
  rewards: (runId: string, iteration: number) => `${keys.iteration(runId, iteration)}rewards.json`,
  /** The iteration's training samples as one safetensors file (src/batches/batch-file.ts, schemas/sample.schema.json). */
  batch: (runId: string, iteration: number, role?: string) =>
    `${keys.iteration(runId, iteration)}batch/${role ? `${assertId('role', role)}/` : ''}samples.safetensors`,
  /** A team with several trained roles writes one batch per role (under batch/<role>/). */
  batchManifest: (runId: string, iteration: number, role?: string) =>
    `${keys.iteration(runId, iteration)}batch/${role ? `${assertId('role', role)}/` : ''}manifest.json`,
  evaluation: (runId: string, iteration: number, name: string) =>
    `${keys.iteration(runId, iteration)}eval/${assertId('evaluation', name)}.json`,
  /** Checkpoints are content-addressed: the same adapter bytes land on the same key. */
  checkpoint: (sha256: string) => `checkpoints/${assertSha256('checkpoint', sha256)}/`,
  /** Written after every file of a checkpoint is uploaded: its presence means the checkpoint is complete. */
  checkpointManifest: (sha256: string) => `checkpoint-manifests/${assertSha256('checkpoint', sha256)}.json`,
  /** Task sets are uploaded once by content, so a run's config can pin exactly the tasks it trained on. */
  taskSet: (sha256: string) => `task-sets/${assertSha256('task set', sha256)}.jsonl`,
  modelAlias: (runId: string, alias: string) => `${keys.run(runId)}aliases/${assertId('alias', alias)}.json`,
  /** Overlay versions are zero-padded, so a prefix listing is in version order. */
  promptOverlays: (runId: string) => `${keys.run(runId)}overlays/`,
  promptOverlay: (runId: string, version: number) =>
    `${keys.run(runId)}overlays/${pad(assertIndex('overlay version', version))}.json`,
  /** A lineage (runs of one schedule): its current policy and run history (src/contracts/lineage.ts). */
  lineage: (name: string) => `lineages/${assertId('lineage', name)}/lineage.json`,
  /** A task file under a task source prefix (tasks.trainPrefix); names sort in arrival order. */
  taskSourceFile: (prefix: string, name: string) =>
    `${assertKey(prefix, { prefix: true })}${assertId('task file', name)}`,
  /** Stable serving names (`deploy.alias`); `volt serve` loads every one of them at start. */
  deployAliases: () => 'deploy-aliases/',
  deployAlias: (alias: string) => `deploy-aliases/${assertId('alias', alias)}.json`,
  /** The run's active prompt (which overlay version its rollouts use) with its promotion history. */
  activePrompt: (runId: string) => `${keys.run(runId)}active-prompt.json`,
} as const;
