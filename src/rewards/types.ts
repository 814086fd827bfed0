import type { RolloutResult } from '../contracts/rollout.js';
import type { Task } from '../contracts/task.js';
import type { ProtectedSnapshot, WorkdirScore } from '../contracts/rollout-outcome.js';
import type { RunInWorkdir } from './run-process.js';
import type { WorkdirFiles } from './workdir-files.js';

/** What one reward function says about one rollout: the value, its named parts, and guard flags. */
export interface RewardResult {
  value: number;
  parts: Record<string, number>;
  flags: string[];
}

/** One reward the agent posted to the gateway (as stored at keys.agentRewards). */
export interface AgentReward {
  name?: string;
  value: number;
  /** A turn reward: the seq of the call it is for (credit per turn); such rewards are not the rollout's reward. */
  span?: number;
}

/**
 * Everything a reward may look at besides the task, gathered by the I/O layer before scoring so the
 * reward functions themselves stay pure (or, for command/sqlite/judge, touch only what they check).
 */
export interface RolloutEvidence {
  result: RolloutResult;
  /** Text of the last assistant message, from choice 0 of the rollout's last ok span. */
  lastAssistantMessage: string | null;
  /** Choice 0's text of every ok span in order: what the model told the agent (the guards read its commands there). */
  assistantTexts?: string[];
  /** The rollout's working directory, still on disk (command and sqlite_state need it). */
  workdir: string | null;
  agentRewards: AgentReward[];
  /** Completion tokens over all ok spans, and the number of LLM calls (turns). */
  completionTokens: number;
  turns: number;
  /** What `prepare(workdir)` recorded before the agent ran (protected file hashes), keyed by part name. */
  snapshots: Record<string, ProtectedSnapshot>;
  /** File-reading parts already scored where the files were (after the agent exited), keyed by part name. */
  workdirScores?: Record<string, WorkdirScore>;
}

/** Capabilities the impure rewards need, passed in rather than read from globals. */
export interface RewardContext {
  /** Python interpreter for sqlite_state (VOLT_PYTHON). */
  python: string;
  /** Environment the judge API key is read from. */
  env: Record<string, string | undefined>;
  signal?: AbortSignal;
  /** Where command and sqlite_state checks run: the rollout's sandbox when the runner gives one, else a plain child. */
  exec?: RunInWorkdir;
  /** The workdir's files as the runner reported them, when the workdir is not on this host (a Kubernetes pod). */
  files?: WorkdirFiles;
}

/**
 * The reward could not be computed for reasons outside the agent's control (judge down, unparseable judge
 * answer, checker crashed to start). The rollout is excluded from the batch, never scored zero.
 */
export class RewardInfraError extends Error {
  readonly kind: string;
  constructor(kind: string, message: string, options?: { cause?: unknown }) {
    super(`${kind} reward infra failure: ${message}`, options);
    this.name = 'RewardInfraError';
    this.kind = kind;
  }
}

export type RewardFn<S> = (
  spec: S,
  task: Task,
  evidence: RolloutEvidence,
  ctx: RewardContext,
  snapshot: ProtectedSnapshot | undefined,
) => RewardResult | Promise<RewardResult>;
