import { z } from 'zod';
import { rolloutOutcomeSchema, runnerResultSchema } from './rollout.js';

/** sha256 of each protected file (relative path → hex, null when absent) taken before the rollout. */
export const protectedSnapshotSchema = z.object({ files: z.record(z.string(), z.string().nullable()) });
export type ProtectedSnapshot = z.output<typeof protectedSnapshotSchema>;

/** The final word on one rollout, written once at keys.rolloutOutcome: a retried activity reuses it. */
export const rolloutOutcomeRecordSchema = z.object({
  rolloutId: z.string().min(1),
  taskId: z.string().min(1),
  groupId: z.string().min(1),
  final: runnerResultSchema,
  attempts: z.array(
    z.object({ attempt: z.number().int().min(0), outcome: rolloutOutcomeSchema, detail: z.string().nullable() }),
  ),
  snapshots: z.record(z.string(), protectedSnapshotSchema),
  /** Results of the reward parts that read files, scored on the rollout's host right after the agent exited (by part name). */
  workdirScores: z
    .record(
      z.string(),
      z.lazy(() => workdirScoreSchema),
    )
    .optional(),
});
export type RolloutOutcomeRecord = z.output<typeof rolloutOutcomeRecordSchema>;

/** One file-reading reward part's result, or why it could not be computed (scored as reward_infra_failed later). */
export const workdirScoreSchema = z.union([
  z.object({ value: z.number(), parts: z.record(z.string(), z.number()), flags: z.array(z.string()) }),
  z.object({ infraError: z.string() }),
]);
export type WorkdirScore = z.output<typeof workdirScoreSchema>;

/** keys.rolloutStarted: written before an attempt registers, so a crash leaves the attempt number behind. */
export const rolloutStartedSchema = z.object({ startedAt: z.string().min(1), policy: z.string().min(1) });
export type RolloutStarted = z.output<typeof rolloutStartedSchema>;

/** What launchRollouts hands the workflow per rollout: the attempt that counts and how it ended. */
export interface LaunchedRollout {
  rolloutId: string;
  attempt: number;
  outcome: z.output<typeof rolloutOutcomeSchema>;
}
