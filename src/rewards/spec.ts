import { z } from 'zod';

/** Where a reward reads the agent's answer from. */
export const answerSourceSchema = z.enum(['output_file', 'last_assistant_message']);

export const numericMatchSchema = z.object({
  kind: z.literal('numeric_match'),
  source: answerSourceSchema.default('output_file'),
  /** Optional regex over the source text; its first capture group (or the whole match) is the answer. */
  pattern: z.string().optional(),
  tolerance: z.number().nonnegative().default(1e-6),
  weight: z.number().default(1),
});

/** A reward spec in a run config. Extended by src/rewards with every reward kind. */
export const rewardSpecSchema = z.discriminatedUnion('kind', [numericMatchSchema]);
export type RewardSpec = z.output<typeof rewardSpecSchema>;
