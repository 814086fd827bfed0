import { z } from 'zod';
import { rolloutOutcomeSchema } from './rollout.js';

/** One rollout's score inside a rewards file. */
export const scoredRolloutRecordSchema = z.object({
  rolloutId: z.string().min(1),
  attempt: z.number().int().min(0),
  taskId: z.string().min(1),
  /** The task's `kind`, null when it has none. */
  taskKind: z.string().nullable(),
  groupId: z.string().min(1),
  outcome: rolloutOutcomeSchema,
  /** null when the rollout failed for infrastructure reasons or its reward could not be computed: never a zero. */
  reward: z.number().nullable(),
  parts: z.record(z.string(), z.number()),
  flags: z.array(z.string()),
  error: z.string().nullable(),
  /**
   * The final attempt's wall time, its successful model calls and their completion tokens (the budget's count); the
   * calls and tokens are null for an infra failure, whose spans are not read. Absent in records written before Volt
   * recorded them (the dashboard shows "-").
   */
  durationMs: z.number().nonnegative().optional(),
  calls: z.number().int().min(0).nullable().optional(),
  completionTokens: z.number().int().min(0).nullable().optional(),
  /** Rewards the agent posted for single calls (`span`: the call's seq), for credit per turn; absent when none. */
  turnRewards: z.array(z.object({ span: z.number().int().min(0), value: z.number() })).optional(),
});
export type ScoredRolloutRecord = z.output<typeof scoredRolloutRecordSchema>;

/** keys.rewards (training) or keys.evaluation (held-out / APO scoring): every rollout of one launch, scored. */
export const rewardsFileSchema = z.object({
  mode: z.enum(['train', 'eval']),
  label: z.string().min(1),
  meanReward: z.number(),
  scored: z.number().int().min(0),
  infraFailed: z.number().int().min(0),
  rollouts: z.array(scoredRolloutRecordSchema),
});
export type RewardsFile = z.output<typeof rewardsFileSchema>;

/** keys.agentRewards as the gateway appends it: `{ rewards: [{ value, name, at }] }`. */
export const agentRewardsFileSchema = z.object({
  rewards: z.array(
    z.object({
      value: z.number(),
      name: z.string().nullable().optional(),
      /** The call (its seq) a turn reward is for; absent: a reward of the whole rollout. */
      span: z.number().int().min(0).nullable().optional(),
      at: z.string().optional(),
    }),
  ),
});
export type AgentRewardsFile = z.output<typeof agentRewardsFileSchema>;
