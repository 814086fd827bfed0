import { z } from 'zod';
import { envNameSchema } from '../contracts/env-name.js';

const int = (min: number) => z.number().int().min(min);

/**
 * Automatic prompt optimisation (the `promptOptimization` workflow): beam search over prompt overlays the gateway
 * applies to the agent's calls. The policy model is not changed; only the system prompt is.
 */
export const apoConfigSchema = z.strictObject({
  /** Beam-search rounds; each round proposes children of every beam member and keeps the best beamWidth. */
  rounds: int(1).max(100).default(3),
  beamWidth: int(1).max(16).default(2),
  /** Children proposed per beam member per round. */
  branchFactor: int(1).max(16).default(2),
  /** Training tasks each parent runs per round (its rollouts are what the proposers learn from). */
  trainBatchSize: int(1).max(10_000).default(8),
  /** Validation tasks scoring parents and children per round (a fresh sample each round). */
  validationBatchSize: int(1).max(10_000).default(8),
  /**
   * The validation set: the LAST `validationTasks` tasks of tasks.trainFile, never used as training batches.
   * The leader is scored on all of it each round; promotion compares these scores. tasks.evalFile stays held out.
   */
  validationTasks: int(1).max(100_000).default(24),
  /** How children are proposed; both may be listed, children are split between them. */
  strategies: z
    .array(z.enum(['textual_gradient', 'bootstrap']))
    .min(1)
    .default(['bootstrap']),
  /** Bootstrapped demonstrations: successful rollouts of the run become worked examples in the overlay. */
  bootstrap: z
    .strictObject({
      /** Worked examples per proposed overlay. */
      demonstrations: int(1).max(32).default(3),
      /** A rollout counts as successful when its reward is at least this. */
      minReward: z.number().default(1),
    })
    .prefault({}),
  /** Textual gradients: an optimiser LLM critiques failed rollouts and edits the prompt. Required for that strategy. */
  optimizer: z
    .strictObject({
      /** Any OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 (separate from the policy's model server). */
      baseUrl: z.url(),
      model: z.string().min(1),
      /** Worker environment variable holding the optimiser's API key (never stored with the run). */
      apiKeyEnv: envNameSchema.optional(),
      temperature: z.number().min(0).max(2).default(0.7),
      /** Failed rollouts shown to the optimiser per critique. */
      failuresPerCritique: int(1).max(32).default(4),
    })
    .optional(),
  /** The overlay to start from (version 1); omitted: the beam starts with the agent's own prompt (version 0). */
  seed: z
    .strictObject({
      mode: z.enum(['replace', 'prepend', 'append']),
      template: z.string().min(1).max(100_000),
    })
    .optional(),
  /** The best overlay becomes the run's active prompt only when it beats the current one by more than this. */
  promoteMargin: z.number().min(0).default(0),
});

export type ApoConfig = z.output<typeof apoConfigSchema>;
