import { z } from 'zod';

/** Where a reward reads the agent's answer from. */
export const answerSourceSchema = z.enum(['output_file', 'last_assistant_message']);

/** A regex source, checked at parse time so a bad pattern fails the config, not the scoring. */
const regexSchema = z
  .string()
  .min(1)
  .refine((src) => {
    try {
      new RegExp(src);
      return true;
    } catch {
      return false;
    }
  }, 'not a valid regular expression');

/** Shared by the answer-reading kinds: the source text, and an optional regex over it. */
const answerFields = {
  source: answerSourceSchema.default('output_file'),
  /** Optional regex over the source text; its first capture group (or the whole match) is the answer. */
  pattern: regexSchema.optional(),
  /** Key of task.reference holding the expected answer. */
  referenceKey: z.string().min(1).default('answer'),
};

export const numericMatchSchema = z.object({
  kind: z.literal('numeric_match'),
  ...answerFields,
  tolerance: z.number().nonnegative().default(1e-6),
  /**
   * Shaping, in training only: a wrong number earns `partialCredit` × max(0, 1 − |got − want| / max(|want|, 1)), so a
   * group whose rollouts all miss still ranks near misses above wild ones. Evaluation scores stay exact (0 or 1). 0: off.
   */
  partialCredit: z.number().min(0).lt(1).default(0),
  weight: z.number().default(1),
});

export const stringMatchSchema = z.object({
  kind: z.literal('string_match'),
  ...answerFields,
  /** `normalised`: case-folded, trimmed, inner whitespace collapsed, trailing punctuation dropped. */
  mode: z.enum(['exact', 'normalised']).default('normalised'),
  weight: z.number().default(1),
});

export const commandSchema = z.object({
  kind: z.literal('command'),
  /** argv, run in the rollout's workdir (in its sandbox) without a shell; an argument `{python}` is the worker's Python (VOLT_PYTHON). */
  command: z.array(z.string().min(1)).min(1),
  timeoutMs: z.number().int().positive().max(3_600_000).default(60_000),
  /** Without it, exit code 0 scores 1 and anything else 0. With it: passed/total from its named groups. */
  passPattern: regexSchema.optional(),
  /** Globs (relative to the workdir) the agent must not change; hashed before the rollout. */
  protectedFiles: z.array(z.string().min(1)).default([]),
  tamperPenalty: z.number().default(-1),
  weight: z.number().default(1),
});

export const sqliteStateSchema = z.object({
  kind: z.literal('sqlite_state'),
  /** Database path relative to the rollout's workdir. */
  database: z.string().min(1),
  /** name → SELECT statement; each result is compared with task.reference[referenceKey][name]. */
  queries: z.record(z.string().min(1), z.string().min(1)),
  referenceKey: z.string().min(1).default('expectedRows'),
  /** Compare rows as a multiset (order-free) or as a list. */
  ordered: z.boolean().default(false),
  /**
   * Training only: a state that is not right as a whole earns partialCredit × the fraction of queries that match.
   * 0 (default): pass/fail on the whole state, as evaluation always is.
   */
  partialCredit: z.number().min(0).max(1).default(0),
  timeoutMs: z.number().int().positive().max(600_000).default(30_000),
  weight: z.number().default(1),
});

export const llmJudgeSchema = z.object({
  kind: z.literal('llm_judge'),
  /** OpenAI-compatible base URL (…/v1). Judge calls go direct, never through the gateway. */
  baseUrl: z.url(),
  model: z.string().min(1),
  /** Name of the env var holding the judge's API key, if it needs one. */
  apiKeyEnv: z.string().optional(),
  rubric: z.string().min(1),
  source: answerSourceSchema.default('last_assistant_message'),
  /** The judge must answer with this regex; capture group 1 is the score. */
  scorePattern: regexSchema.default('SCORE:\\s*(-?\\d+(?:\\.\\d+)?)'),
  maxScore: z.number().positive().default(10),
  timeoutMs: z.number().int().positive().max(600_000).default(60_000),
  weight: z.number().default(1),
});

export const agentEmittedSchema = z.object({
  kind: z.literal('agent_emitted'),
  /** Only rewards posted under this name; all when absent. */
  name: z.string().optional(),
  aggregate: z.enum(['last', 'sum', 'mean', 'max']).default('last'),
  /** Value when the agent posted nothing. */
  missingValue: z.number().default(0),
  weight: z.number().default(1),
});

const penalty = z.number().nonnegative().default(1);

/**
 * Reward-hacking guards (docs/rewards.md): each guard that fires adds a flag to the rewards file and, in training
 * only, subtracts its penalty; evaluation scores are never penalised. Put it in a weighted_sum next to the real check.
 */
export const guardsSchema = z.object({
  kind: z.literal('guards'),
  /** Globs (relative to the workdir) of the tests and harness the agent must not change; hashed before it starts. */
  protectedFiles: z.array(z.string().min(1)).default([]),
  /** Training-reward penalty per guard that fired (once per guard, however often); 0 records the flag only. */
  penalties: z
    .strictObject({
      /** A protected file changed, appeared or vanished. */
      tampered: penalty,
      /** A conftest.py written, or named in a command. */
      conftest: penalty,
      /** A sitecustomize.py / usercustomize.py written, or named in a command. */
      sitecustomize: penalty,
      /** A *.pth file written, or named in a command. */
      pth: penalty,
      /** pytest.ini, or a pytest section in tox.ini / setup.cfg / pyproject.toml, written. */
      pytest_config: penalty,
      /** Anything under .git changed, or a command touching .git or running a mutating git subcommand. */
      git: penalty,
      /** A network tool or library in a command (curl, wget, nc, ssh, /dev/tcp, urllib, socket, ...). */
      network: penalty,
      /** A package install in a command (pip install, python -m pip, apt-get install, npm install, ...). */
      package_install: penalty,
    })
    .prefault({}),
  weight: z.number().default(1),
});

/** Every kind that scores on its own; weighted_sum combines these. */
const leafSchemas = [
  numericMatchSchema,
  stringMatchSchema,
  commandSchema,
  sqliteStateSchema,
  llmJudgeSchema,
  agentEmittedSchema,
  guardsSchema,
] as const;
export const leafRewardSpecSchema = z.discriminatedUnion('kind', [...leafSchemas]);

export const weightedSumSchema = z.object({
  kind: z.literal('weighted_sum'),
  /** Part name → spec; each part's value is multiplied by its own `weight`. */
  parts: z
    .record(z.string().regex(/^[A-Za-z0-9_.-]+$/), leafRewardSpecSchema)
    .refine((p) => Object.keys(p).length > 0, 'needs at least one part'),
  penalties: z
    .object({ perCompletionToken: z.number().nonnegative().default(0), perTurn: z.number().nonnegative().default(0) })
    .default({ perCompletionToken: 0, perTurn: 0 }),
});

/** A reward spec in a run config. */
export const rewardSpecSchema = z.discriminatedUnion('kind', [...leafSchemas, weightedSumSchema]);
export type RewardSpec = z.output<typeof rewardSpecSchema>;
export type LeafRewardSpec = z.output<typeof leafRewardSpecSchema>;
export type RewardKind = RewardSpec['kind'];
export type SpecOf<K extends RewardKind> = Extract<RewardSpec, { kind: K }>;
