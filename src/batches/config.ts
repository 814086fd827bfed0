import { z } from 'zod';
import { CALL_KINDS } from '../contracts/call-kind.js';

/** How a batch is built from rewarded rollouts; part of a run config. */
export const batchConfigSchema = z.object({
  /**
   * grpo, dr_grpo, rloo: group-relative advantages for the RL update. rejection_sampling (expert iteration): supervised
   * fine-tuning on the run's own rollouts whose reward is at least `rejectionThreshold`, on the engine's token ids
   * (the trainer's plain NLL, batch file objective `sft`); groups and their variance play no part.
   */
  estimator: z.enum(['grpo', 'dr_grpo', 'rloo', 'rejection_sampling']).default('grpo'),
  /** rejection_sampling keeps the training rollouts whose reward is at least this. */
  rejectionThreshold: z.number().default(1),
  /**
   * A supervised warm start: the first this-many iterations train by rejection_sampling, then `estimator` (e.g. SFT
   * on the rollouts that passed, then GRPO). 0: none.
   */
  warmStartIterations: z.number().int().min(0).default(0),
  /**
   * How a rollout's reward reaches its calls. `broadcast`: every call of the rollout gets the rollout's advantage (its
   * return: the reward plus any turn rewards the agent posted), multi-turn calls merged into one sample. `per_turn`:
   * each trained call is its own sample with its own return G_t = Σ_{k≥t} γ^(k-t) r_k (r_k: the turn rewards posted
   * for call k, the rollout's reward on the last), its advantage taken against the same turn of the group's other
   * rollouts (src/batches/turn-credit.ts). Policy-gradient estimators only.
   */
  credit: z.enum(['broadcast', 'per_turn']).default('broadcast'),
  /** per_turn's discount γ of later turns' rewards (1: every turn gets all that follows it). */
  gamma: z.number().min(0).max(1).default(1),
  /** Added to the std in grpo so a near-constant group does not explode. */
  eps: z.number().positive().default(1e-6),
  /** Groups with fewer scored rollouts than this are dropped (infra failures do not count). */
  minGroupSize: z.number().int().min(2).default(2),
  /** Drop groups whose rewards are all equal: their advantages are zero and only cost compute. */
  dropZeroVariance: z.boolean().default(true),
  /**
   * What the loss averages over. `all_groups`: groups dropped for zero variance still count, as their samples would at
   * advantage 0 (TRL GRPO's token-level normaliser), so a step built from few informative groups is a small step.
   * `kept_samples`: only the samples in the batch, so every step is full-sized however little signal it holds.
   */
  lossNormalizer: z.enum(['all_groups', 'kept_samples']).default('all_groups'),
  /**
   * Longest prompt + response a sample may have. The default is the served SmolLM2-135M's whole context (the model
   * server's default length), so no call the engine could answer is dropped for length: an agent CLI's prompt grows
   * with every turn (Claude Code's first is 2,779 tokens here). Lower it when the update's memory is tight.
   */
  maxTokens: z.number().int().positive().default(8192),
  /** Over-long samples: cut the response to fit, or drop the sample. */
  overLength: z.enum(['truncate', 'drop']).default('truncate'),
  /**
   * Model names, as the agent asked for them (`model` of its request; `*` matches any run of characters), whose calls
   * stay recorded but are not trained: an agent's side calls, e.g. `["claude-haiku-*"]` for the small-model calls
   * Claude Code makes for titles. Counted in the manifest's span drops as `excluded_model`.
   */
  excludeModels: z.array(z.string().min(1).max(200)).max(100).default([]),
  /**
   * Call kinds (Span.callKind: `agent_turn`, `structured`, `text`) whose calls stay recorded but are not trained, e.g.
   * `["structured", "text"]` to train a tool-using agent on its loop's turns alone. Counted as `excluded_call_kind`.
   */
  excludeCallKinds: z.array(z.enum(CALL_KINDS)).default([]),
});

export type BatchConfig = z.output<typeof batchConfigSchema>;

/**
 * What a batch is built with: the run's batch config, and the agent roles whose calls are trained (run config `team`:
 * the calls of other roles, and calls no role matched, stay recorded but are not samples); null: every call.
 */
export type BatchBuildConfig = BatchConfig & { trainedRoles?: readonly string[] | null };

/** The batch config iteration `iteration` uses: rejection sampling during the warm start, else the run's own. */
export function batchConfigFor(config: BatchConfig, iteration: number): BatchConfig {
  return iteration < config.warmStartIterations ? { ...config, estimator: 'rejection_sampling' } : config;
}

/** What the trainer optimises for a batch built with this config (the batch file header's `objective`). */
export const objectiveOf = (config: Pick<BatchConfig, 'estimator'>): 'policy_gradient' | 'sft' =>
  config.estimator === 'rejection_sampling' ? 'sft' : 'policy_gradient';
