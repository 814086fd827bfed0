/**
 * The one table of typed, non-retryable failure types. Activities throw
 * `ApplicationFailure.create({ type: FailureType.X, nonRetryable: true })`; retry policies name the same types.
 */
export const FailureType = {
  /** A run config (or update payload) failed validation; the message lists the bad fields' paths. */
  InvalidConfig: 'VoltInvalidConfig',
  /** A task set file is missing, unreadable, or holds invalid tasks. */
  InvalidTaskSet: 'VoltInvalidTaskSet',
  /** A batch or trainer input that can never succeed (schema violation, empty after validation). */
  InvalidBatch: 'VoltInvalidBatch',
  /** The trainer process failed in a way a retry cannot fix (bad arguments, OOM with the same settings). */
  TrainerFailed: 'VoltTrainerFailed',
  /** Every attempt of a rollout failed for infrastructure reasons. */
  RolloutsExhausted: 'VoltRolloutsExhausted',
  /** Fewer than eval.minScoredFraction of an evaluation's tasks were scored (infra failures): its score would lie. */
  EvaluationIncomplete: 'VoltEvaluationIncomplete',
  /** Rollouts need the bubblewrap sandbox and this worker cannot provide it (the message says why and the fix). */
  SandboxUnavailable: 'VoltSandboxUnavailable',
  /** A referenced checkpoint or alias does not exist. */
  CheckpointNotFound: 'VoltCheckpointNotFound',
  /** A stored record is not JSON or fails its src/contracts schema; the message names the key and the bad fields. */
  CorruptRecord: 'VoltCorruptRecord',
} as const;

export type FailureType = (typeof FailureType)[keyof typeof FailureType];

export const nonRetryableFailureTypes: string[] = Object.values(FailureType);
