import type { RolloutRef } from '../storage/keys.js';

/** How a rollout attempt ended. Only `infra_failed` is retried (as a new attempt); the others are results. */
export type RolloutOutcome = 'succeeded' | 'agent_failed' | 'timed_out' | 'infra_failed';

/** What a runner reports for one rollout attempt. Large things (logs, spans) are object-store keys. */
export interface RolloutResult {
  ref: RolloutRef;
  taskId: string;
  /** Group of rollouts of the same task in this iteration (GRPO group). */
  groupId: string;
  mode: 'train' | 'eval';
  outcome: RolloutOutcome;
  exitCode: number | null;
  signal: string | null;
  durationMs: number;
  /** Contents of VOLT_OUTPUT_FILE if the agent wrote one (bounded), else null. */
  outputText: string | null;
  stdoutKey: string;
  stderrKey: string;
  /** Why an attempt was infra_failed or timed_out, for the operator. */
  detail: string | null;
}
