import type { RolloutOutcome } from '../contracts/rollout.js';
import type { RunStatus } from '../workflows/types.js';
import type { ModelAlias } from '../contracts/policy.js';

/** The handful of config fields a reader needs to place a run; taken from the workflow's input. */
export interface ConfigSummary {
  model: string;
  iterations: number;
  groupSize: number;
  tasksPerIteration: number;
  /** The rollouts' isolation (sandboxLabel). */
  sandbox: string;
  rewardKind: string;
}

/** One LLM call of a sample rollout, as a chat turn: what the agent sent and what the policy answered. */
export interface TranscriptTurn {
  seq: number;
  messages: { role: string; content: string }[];
  completion: string;
  finishReason: string | null;
  completionTokens: number | null;
  servedBy: string;
  error: string | null;
}

export interface SampleRollout {
  label: 'best' | 'worst';
  rolloutId: string;
  attempt: number;
  taskId: string;
  outcome: RolloutOutcome;
  reward: number | null;
  turns: TranscriptTurn[];
  /** Calls beyond the rendered ones (long rollouts are cut). */
  omittedTurns: number;
}

/** Wall-clock extent of the run across continue-as-new: first execution's start to the latest one's close. */
export interface RunTiming {
  /** Temporal's status name of the latest execution (RUNNING, COMPLETED, FAILED, ...). */
  state: string;
  startedAt: string;
  closedAt: string | null;
}

/** Everything the report shows, gathered once (I/O) and then rendered by pure functions. */
export interface ReportData {
  runId: string;
  status: RunStatus;
  timing: RunTiming;
  config: ConfigSummary | null;
  /** The base model's held-out score (keys.evaluation(run, 0, 'base')), null before it was evaluated. */
  baseScore: number | null;
  promoted: ModelAlias['current'] | null;
  /** The last iteration's best and worst rollouts, with their spans. */
  samples: { iteration: number; rollouts: SampleRollout[] } | null;
  /** When the report was produced (ISO): the end of the wall time of a run still running. */
  generatedAt: string;
}
