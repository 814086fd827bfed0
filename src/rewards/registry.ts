import type { Task } from '../contracts/task.js';
import { agentEmitted } from './agent-emitted.js';
import { commandArgv, commandReward } from './command-reward.js';
import { llmJudge } from './llm-judge.js';
import { numericMatch, stringMatch } from './match-rewards.js';
import { fileFlags, guardsReward, snapshotGuards } from './hacking-guards.js';
import { snapshotProtected, type Workdir } from './protected-files.js';
import type { LeafRewardSpec, RewardSpec, SpecOf } from './spec.js';
import { sqliteQuery, sqliteState } from './sqlite-state.js';
import {
  RewardInfraError,
  type RewardContext,
  type RewardFn,
  type RewardResult,
  type RolloutEvidence,
} from './types.js';
import { weightedSum } from './weighted-sum.js';
import type { ProtectedSnapshot, WorkdirScore } from '../contracts/rollout-outcome.js';

type LeafKind = LeafRewardSpec['kind'];

/** One reward function per leaf kind; weighted_sum composes them. */
export const rewardRegistry: { [K in LeafKind]: RewardFn<SpecOf<K>> } = {
  numeric_match: numericMatch,
  string_match: stringMatch,
  command: (spec, task, evidence, ctx, snapshot) => commandReward(spec, task, evidence, snapshot, ctx),
  sqlite_state: sqliteState,
  llm_judge: llmJudge,
  agent_emitted: agentEmitted,
  guards: (spec, _task, evidence) => guardsReward(spec, evidence, evidence.workdirScores?.[spec.kind]),
};

/** The parts of a spec by name: a leaf is its own single part, named after its kind. */
export function rewardParts(spec: RewardSpec): [string, LeafRewardSpec][] {
  return spec.kind === 'weighted_sum' ? Object.entries(spec.parts) : [[spec.kind, spec]];
}

/** Before the agent runs: hash every command part's protected files and the guards' files. Returns snapshots by part name. */
export async function prepareReward(spec: RewardSpec, workdir: Workdir): Promise<Record<string, ProtectedSnapshot>> {
  const snapshots: Record<string, ProtectedSnapshot> = {};
  for (const [name, part] of rewardParts(spec)) {
    if (part.kind === 'command' && part.protectedFiles.length > 0)
      snapshots[name] = await snapshotProtected(workdir, part.protectedFiles);
    if (part.kind === 'guards') snapshots[name] = await snapshotGuards(part, workdir);
  }
  return snapshots;
}

/** Parts that read the rollout's files: scored on the rollout's host right after the agent exits (scoreWorkdirParts). */
export const readsWorkdir = (spec: LeafRewardSpec) =>
  spec.kind === 'command' || spec.kind === 'sqlite_state' || spec.kind === 'guards';

export async function scoreLeaf(
  spec: LeafRewardSpec,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
  partName: string,
): Promise<RewardResult> {
  // The guards combine their stored file flags with the commands in the spans, so they are scored here either way.
  if (spec.kind === 'guards') return guardsReward(spec, evidence, evidence.workdirScores?.[partName]);
  const stored = readsWorkdir(spec) ? evidence.workdirScores?.[partName] : undefined;
  if (stored) {
    if ('infraError' in stored) throw new RewardInfraError(spec.kind, stored.infraError);
    return stored;
  }
  const fn = rewardRegistry[spec.kind] as RewardFn<LeafRewardSpec>;
  return fn(spec, task, evidence, ctx, evidence.snapshots[partName]);
}

/**
 * Right after the agent exited, while its workdir exists on this host: score every part that reads files. The
 * results go into the outcome record, so computeRewards on any worker needs only the object store.
 */
export async function scoreWorkdirParts(
  spec: RewardSpec,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
): Promise<Record<string, WorkdirScore>> {
  const scores: Record<string, WorkdirScore> = {};
  for (const [name, part] of rewardParts(spec)) {
    if (!readsWorkdir(part)) continue;
    try {
      if (part.kind === 'guards') {
        const snapshot = evidence.snapshots[name];
        if (!snapshot || evidence.workdir === null)
          throw new RewardInfraError('guards', 'no snapshot was taken before the agent started (call prepareReward)');
        scores[name] = {
          value: 0,
          parts: {},
          flags: await fileFlags(part, ctx.files ?? evidence.workdir, snapshot, Object.keys(task.hidden?.files ?? {})),
        };
        continue;
      }
      scores[name] = await scoreLeaf(part, task, { ...evidence, workdirScores: undefined }, ctx, name);
    } catch (err) {
      if (!(err instanceof RewardInfraError)) throw err;
      scores[name] = { infraError: err.message };
    }
  }
  return scores;
}

/** The checks of the command and sqlite_state parts, for a runner that runs them ahead where the workdir is (a pod). */
export function workdirCommands(
  spec: RewardSpec,
  python: string,
  workdir: string,
): { argv: string[]; timeoutMs: number; input?: string }[] {
  return rewardParts(spec).flatMap(([, part]) => {
    if (part.kind === 'command') return [{ argv: commandArgv(part, python), timeoutMs: part.timeoutMs }];
    if (part.kind === 'sqlite_state') return [{ ...sqliteQuery(part, python, workdir), timeoutMs: part.timeoutMs }];
    return [];
  });
}

/** The reward reads the workdir's file hashes (protected files, guards): a remote runner must report them. */
export const needsFileHashes = (spec: RewardSpec) =>
  rewardParts(spec).some(
    ([, part]) => part.kind === 'guards' || (part.kind === 'command' && part.protectedFiles.length > 0),
  );

/** Score one rollout. Throws RewardInfraError when the reward cannot be computed (never a silent zero). */
export function scoreRollout(
  spec: RewardSpec,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
): Promise<RewardResult> {
  if (spec.kind === 'weighted_sum') return weightedSum(spec, task, evidence, ctx, scoreLeaf);
  return scoreLeaf(spec, task, evidence, ctx, spec.kind);
}
