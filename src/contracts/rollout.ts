import { z } from 'zod';
import { safeIdSchema } from './safe-id.js';

const index = z.number().int().min(0);

/** Which attempt of which rollout: the ids every rollout key is built from, so they must be safe ids. */
export const rolloutRefSchema = z.object({
  runId: safeIdSchema('run id'),
  iteration: index,
  rolloutId: safeIdSchema('rollout id'),
  attempt: index,
});
export type RolloutRef = z.output<typeof rolloutRefSchema>;

/** How a rollout attempt ended. Only `infra_failed` is retried (as a new attempt); the others are results. */
export const rolloutOutcomeSchema = z.enum(['succeeded', 'agent_failed', 'timed_out', 'infra_failed']);
export type RolloutOutcome = z.output<typeof rolloutOutcomeSchema>;

/** What a runner reports for one rollout attempt. Large things (logs, spans) are object-store keys. */
export const rolloutResultSchema = z.object({
  ref: rolloutRefSchema,
  taskId: z.string().min(1),
  /** Group of rollouts of the same task in this iteration (GRPO group). */
  groupId: z.string().min(1),
  mode: z.enum(['train', 'eval']),
  outcome: rolloutOutcomeSchema,
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  durationMs: z.number().nonnegative(),
  /** Contents of VOLT_OUTPUT_FILE if the agent wrote one (bounded), else null. */
  outputText: z.string().nullable(),
  stdoutKey: z.string().min(1),
  stderrKey: z.string().min(1),
  /** Why an attempt was infra_failed or timed_out, for the operator. */
  detail: z.string().nullable(),
});
export type RolloutResult = z.output<typeof rolloutResultSchema>;

/** A runner's report, stored at keys.rolloutResult: the contract result plus the workdir (null: no runner keeps it past afterAgent). */
export const runnerResultSchema = rolloutResultSchema.extend({
  workdir: z.string().nullable(),
  /** How the attempt was isolated (docs/sandbox.md). */
  sandbox: z.enum(['bubblewrap', 'none', 'kubernetes']),
  /** Model calls of the attempt that failed on the model side (the gateway's count when its token closed); absent when none did. */
  upstreamFailures: z.number().int().min(0).optional(),
});
export type RunnerResult = z.output<typeof runnerResultSchema>;
