/**
 * The object-store key layout. This is the only file that knows it; every key is built from ids that
 * passed `assertId`, so no user string can climb out of its prefix.
 */
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export class UnsafeIdError extends Error {
  constructor(kind: string, value: unknown) {
    super(`unsafe ${kind} id ${JSON.stringify(value)}: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit, no '..'`);
    this.name = 'UnsafeIdError';
  }
}

export function assertId(kind: string, value: unknown): string {
  if (typeof value !== 'string' || !ID.test(value) || value.includes('..')) throw new UnsafeIdError(kind, value);
  return value;
}

function assertIndex(kind: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw new UnsafeIdError(kind, value);
  return value;
}

const pad = (n: number, width = 6) => String(n).padStart(width, '0');

export interface RolloutRef {
  runId: string;
  iteration: number;
  rolloutId: string;
  attempt: number;
}

export const keys = {
  run: (runId: string) => `runs/${assertId('run', runId)}/`,
  runConfig: (runId: string) => `${keys.run(runId)}config.json`,
  iteration: (runId: string, iteration: number) => `${keys.run(runId)}iterations/${pad(assertIndex('iteration', iteration))}/`,
  rollout: (r: RolloutRef) =>
    `${keys.iteration(r.runId, r.iteration)}rollouts/${assertId('rollout', r.rolloutId)}/attempt-${pad(assertIndex('attempt', r.attempt), 3)}/`,
  rolloutResult: (r: RolloutRef) => `${keys.rollout(r)}result.json`,
  rolloutLog: (r: RolloutRef, stream: 'stdout' | 'stderr') => `${keys.rollout(r)}${stream}.log`,
  /** Spans sort by sequence number within a rollout attempt, so a prefix listing is already in order. */
  spans: (r: RolloutRef) => `${keys.rollout(r)}spans/`,
  span: (r: RolloutRef, seq: number) => `${keys.spans(r)}${pad(assertIndex('seq', seq), 8)}.json`,
  agentRewards: (r: RolloutRef) => `${keys.rollout(r)}agent-rewards.json`,
  rewards: (runId: string, iteration: number) => `${keys.iteration(runId, iteration)}rewards.json`,
  batch: (runId: string, iteration: number) => `${keys.iteration(runId, iteration)}batch/samples.jsonl`,
  batchManifest: (runId: string, iteration: number) => `${keys.iteration(runId, iteration)}batch/manifest.json`,
  evaluation: (runId: string, iteration: number, name: string) =>
    `${keys.iteration(runId, iteration)}eval/${assertId('evaluation', name)}.json`,
  trainerState: (runId: string, iteration: number) => `${keys.iteration(runId, iteration)}trainer-state/`,
  /** Checkpoints are content-addressed: the same adapter bytes land on the same key. */
  checkpoint: (sha256: string) => {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new UnsafeIdError('checkpoint sha256', sha256);
    return `checkpoints/${sha256}/`;
  },
  modelAlias: (runId: string, alias: string) => `${keys.run(runId)}aliases/${assertId('alias', alias)}.json`,
  promptOverlay: (runId: string, version: number) => `${keys.run(runId)}overlays/${pad(assertIndex('overlay version', version))}.json`,
} as const;
