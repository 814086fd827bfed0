import { z } from 'zod';
import { batchConfigSchema } from '../batches/config.js';
import { rewardSpecSchema } from '../rewards/spec.js';
import { kubeRunnerConfigSchema } from '../rollouts/kube-config.js';
import { rolloutLimitsSchema, sandboxKindSchema } from '../rollouts/sandbox-spec.js';
import { DEFAULT_ENV_ALLOW_LIST } from '../rollouts/spec.js';
import { agentEnvNameSchema } from '../contracts/env-name.js';
import { hostedToolsSchema } from '../contracts/hosted-tools.js';
import { safeIdSchema } from '../contracts/safe-id.js';
import { teamConfigSchema } from '../contracts/team.js';
import { taskSetHashSchema } from '../contracts/task.js';
import { apoConfigSchema } from './apo.js';
import { parseFrozen } from './errors.js';
import { crossFieldProblems, numberRules, type RuledPath } from './run-rules.js';

const int = (min: number) => z.number().int().min(min);
/** A number field bounded by its rule in run-rules.ts, the description the workflow and the trainer share. */
function ruled(path: RuledPath) {
  const rule: { int?: boolean; gt?: number; min?: number; lt?: number; max?: number } = numberRules[path];
  let n = z.number();
  if (rule.int) n = n.int();
  if (rule.gt !== undefined) n = n.gt(rule.gt);
  if (rule.min !== undefined) n = n.min(rule.min);
  if (rule.lt !== undefined) n = n.lt(rule.lt);
  if (rule.max !== undefined) n = n.max(rule.max);
  return n;
}
const seconds = z
  .number()
  .int()
  .positive()
  .max(7 * 24 * 3600);

/** An object-store prefix of task files (tasks.trainPrefix, `volt tasks add --prefix`). */
export const taskPrefixSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_./-]{0,511}\/$/, "a key prefix: [A-Za-z0-9_./-], ending in '/'")
  .refine(
    (p) =>
      p
        .split('/')
        .slice(0, -1)
        .every((seg) => seg !== '' && seg !== '.' && seg !== '..'),
    "no empty, '.' or '..' segments",
  );

/** A run's configuration. Unknown keys are errors, so a typo never silently falls back to a default. */
export const runConfigSchema = z
  .strictObject({
    /** Names the run everywhere (object-store prefix, workflow id): 1-128 of [A-Za-z0-9_.-], no '/' or '..'. */
    runId: safeIdSchema('run id'),
    /** Seeds task sampling and the trainer, so a run can be repeated. */
    seed: int(0).default(0),
    model: z
      .strictObject({
        /** Base model the policy starts from: the name the model server serves it under (vLLM's --served-model-name). */
        base: z.string().min(1).default('smollm2-135m-instruct'),
        /**
         * Where the trainer loads the base model's weights from: a model directory (with config.json) on the gpu
         * workers, e.g. a volume mounted there. Default: `base` itself (the bundled SmolLM2 resolves by that name).
         */
        weights: z.string().min(1).optional(),
        /** LoRA adapter trained on top of the frozen base. */
        lora: z
          .strictObject({
            rank: ruled('model.lora.rank').default(8),
            /** Scale is alpha / rank; an integer, as the trainer's lora_alpha is. */
            alpha: ruled('model.lora.alpha').default(16),
            dropout: ruled('model.lora.dropout').default(0),
            /** Module names (as in the model's state dict) that get adapters. */
            targetModules: z.array(z.string().min(1)).min(1).default(['q_proj', 'v_proj']),
          })
          .prefault({}),
        /**
         * Start from a stored policy instead of a fresh adapter: a run's promoted policy, a lineage's current policy or a
         * checkpoint (sha256 of keys.checkpoint). With `lineage` set and this absent, the run starts from the lineage's current policy.
         */
        startFrom: z
          .union([
            z.strictObject({ run: safeIdSchema('run id') }),
            z.strictObject({ lineage: safeIdSchema('lineage name') }),
            z.strictObject({
              checkpoint: z.string().regex(/^[0-9a-f]{64}$/, 'a checkpoint is 64 lowercase hex digits (sha256)'),
            }),
          ])
          .optional(),
      })
      .prefault({}),
    /**
     * The lineage this run belongs to (runs of one schedule): it starts from the lineage's current policy, trains on the
     * tasks added since the lineage's previous run, and its candidates must beat that policy (the incumbent) to replace it.
     */
    lineage: safeIdSchema('lineage name').optional(),
    /** Where production finds the lineage's current policy: the model server serves it as `model: "<alias>"` (needs `lineage`). */
    deploy: z
      .strictObject({
        alias: safeIdSchema('alias'),
      })
      .optional(),
    /** The unmodified agent: how to start it. It only sees OPENAI_BASE_URL/OPENAI_API_KEY, ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY, VOLT_TASK* and the allow-list. */
    agent: z.strictObject({
      /** argv of the agent process, run without a shell, e.g. ["node", "examples/agent.mjs"]. */
      command: z.array(z.string().min(1)).min(1),
      /** Base for relative file paths in `command` (default: the worker's cwd); the agent itself always runs in a fresh per-rollout working directory. */
      cwd: z.string().min(1).optional(),
      /**
       * Directories a sandboxed agent may read besides the open root: where its programs and code live when that is
       * somewhere the sandbox hides (the operator's home, /tmp), e.g. ["/home/me/agents", "/opt/venvs/agent"].
       * Absolute paths; `agent.cwd` (the worker's cwd by default) and the install prefix of the agent's program are
       * always readable. A path inside the worker's data dir is refused (the rollouts activity fails, non-retryable, naming it).
       * Local runner only: a Kubernetes pod reads what its image holds.
       */
      readOnlyPaths: z
        .array(
          z
            .string()
            .min(1)
            .refine((p) => p.startsWith('/'), { message: 'must be an absolute path' })
            .refine((p) => p.split('/').every((part) => part !== '..' && part !== '.'), {
              message: 'must not contain "." or ".." segments',
            })
            .refine((p) => p.replace(/\/+$/, '') !== '', { message: 'must not be / (the root is already readable)' }),
        )
        .max(32)
        .default([]),
      /**
       * Hosted tools (web_search, file_search, code_interpreter, ...) an agent offers in a Responses call, which the
       * policy cannot run: 'drop' them and note it in the span, or 'refuse' the call with a 400 naming the tool.
       */
      hostedTools: hostedToolsSchema.default('drop'),
      /** Variables set for the agent, e.g. { "AGENT_TEMPERATURE": "0.7" } (not for secrets: they are stored with the run). */
      env: z.record(agentEnvNameSchema, z.string()).default({}),
      /** Worker environment variables passed through to the agent; everything else is withheld. */
      envAllowList: z.array(agentEnvNameSchema).default([...DEFAULT_ENV_ALLOW_LIST]),
      /** A rollout running longer than this is killed and counts as timed_out (infra_failed when one model call held it for half this or more). */
      timeoutSec: seconds.default(300),
      /**
       * Per-attempt budget the gateway enforces: a call past it gets a 429 and the attempt ends agent_failed (`budget`);
       * `n` above maxChoicesPerCall is a 400; `max_tokens` above maxTokensPerCall is clamped to it (recorded in the span).
       */
      budget: z
        .strictObject({
          maxModelCalls: int(1).nullable().default(null),
          maxCompletionTokens: int(1).nullable().default(null),
          /** Calls later than this many seconds after the attempt was registered are refused. */
          maxWallSec: seconds.nullable().default(null),
          maxTokensPerCall: int(1).max(1_000_000).default(4096),
          maxChoicesPerCall: int(1).max(16).default(4),
        })
        .prefault({}),
    }),
    /**
     * Task sets: JSONL files of { id, input, reference? }. `volt train` / `volt optimize-prompt` validate them and pin
     * them in the object store by content before starting the run (a run started otherwise: its first activity does);
     * every activity reads the pinned tasks by hash, so workers need no task files and editing one never changes a run.
     */
    tasks: z
      .strictObject({
        /** JSONL file of training tasks, relative to where the run is started; may be left out when trainSet or trainPrefix is given. */
        trainFile: z.string().min(1).optional(),
        /**
         * An object-store prefix of JSONL task files (`volt tasks add`): a run takes the files its lineage has not
         * trained on yet, plus `replayShare` older tasks per new one; with nothing new it ends at once ("no new tasks").
         */
        trainPrefix: taskPrefixSchema.optional(),
        /** Older tasks (from files earlier runs of the lineage took) replayed per new task: round(replayShare × new), at most all of them. */
        replayShare: z.number().min(0).max(10).default(0.25),
        /** Held-out tasks for evaluation and promotion; should not overlap the train file. May be left out when evalSet is given. */
        evalFile: z.string().min(1).optional(),
        /** sha256 of the pinned train set (keys.taskSet); filled in when the run is started, or given to reuse a pinned set (it then wins over trainFile). */
        trainSet: taskSetHashSchema.optional(),
        /** sha256 of the pinned eval set; like trainSet. */
        evalSet: taskSetHashSchema.optional(),
      })
      .refine((t) => t.trainFile !== undefined || t.trainSet !== undefined || t.trainPrefix !== undefined, {
        message: 'required: a task file, unless trainSet names a pinned set or trainPrefix a task source',
        path: ['trainFile'],
      })
      .refine((t) => t.evalFile !== undefined || t.evalSet !== undefined, {
        message: 'required: a task file, unless evalSet names a pinned set',
        path: ['evalFile'],
      }),
    /** Training iterations in total (each: rollouts → rewards → batch → update → maybe eval). */
    iterations: int(1).max(100_000).default(3),
    rollouts: z
      .strictObject({
        /** Rollouts per task (the GRPO group); advantages compare rollouts within a group. */
        groupSize: ruled('rollouts.groupSize').default(4),
        /** Tasks sampled per iteration; rollouts per iteration = tasksPerIteration × groupSize. */
        tasksPerIteration: ruled('rollouts.tasksPerIteration').default(4),
        /** Agent processes running at once; 2 suits a 2-core machine running the model server too. */
        concurrency: int(1).max(10_000).default(2),
        /** 'local' runs agents as child processes of the worker; 'kubernetes' as Jobs (needs `kubernetes`). */
        runner: z.enum(['local', 'kubernetes']).default('local'),
        /** Attempts per rollout; only infrastructure failures are retried, agent failures are results. */
        maxAttempts: int(1).max(10).default(3),
        /** Kubernetes Job settings; required when runner is 'kubernetes'. */
        kubernetes: kubeRunnerConfigSchema.optional(),
        /** Local isolation: 'bubblewrap' (namespaces, only the gateway reachable) or, explicitly, 'none' (docs/sandbox.md). */
        sandbox: sandboxKindSchema.default('bubblewrap'),
        /** Per-attempt rlimits (memory, processes, open files, CPU seconds) of sandboxed local agents. */
        limits: rolloutLimitsSchema.prefault({}),
        /**
         * DAPO-style dynamic sampling (absent: off): while fewer than `minInformativeGroups` groups have rewards that
         * differ, groups of other training tasks are rolled out, at most `maxExtraRounds` rounds of at most tasksPerIteration tasks each.
         */
        dynamicSampling: z
          .strictObject({
            maxExtraRounds: int(1).max(20),
            /** Informative groups wanted in the batch (default: rollouts.tasksPerIteration). */
            minInformativeGroups: int(1).max(100_000).optional(),
          })
          .optional(),
      })
      .prefault({}),
    /**
     * Distillation: a stronger model serves the training rollouts of the warm-start iterations
     * (batch.warmStartIterations), through the gateway, recorded like any call; the rollouts whose reward passes
     * batch.rejectionThreshold are fitted by SFT, their text tokenized with the student's tokenizer and chat template
     * (the model server's /tokenize: the one place Volt retokenizes, since a teacher's ids are in its own vocabulary).
     * Evaluation always samples the student. Any OpenAI-compatible chat completions endpoint.
     */
    teacher: z
      .strictObject({
        /** The endpoint's base URL as the OpenAI SDKs take it, ending in /v1 (e.g. https://api.openai.com/v1). */
        baseUrl: z.url({ protocol: /^https?$/ }).refine((u) => /\/v1\/?$/.test(new URL(u).pathname), {
          message: 'must end in /v1 (the OpenAI SDK base URL)',
        }),
        /** The model the teacher is asked for (its `model` field). */
        model: z.string().min(1).max(256),
        /**
         * The gateway's environment variable holding the teacher's API key, sent as a bearer token; the key itself is
         * never stored with the run. Must start with VOLT_TEACHER_ (so a run config cannot send another secret away).
         */
        apiKeyEnv: z
          .string()
          .regex(/^VOLT_TEACHER_[A-Z0-9_]+$/, 'an environment variable name starting with VOLT_TEACHER_')
          .default('VOLT_TEACHER_API_KEY'),
      })
      .optional(),
    /**
     * Several agents in one harness (a planner and a coder, a solver and a checker): the roles the gateway tells apart
     * from what the unmodified agent sends (the `model` it asks for, its system message, a header) and the policy
     * serving each. Only calls of the `trained` role become samples; frozen roles and unmatched calls are served and
     * recorded, never trained. Absent: every call is the run's policy (one agent).
     */
    team: teamConfigSchema.optional(),
    /** How each rollout is scored (see src/rewards/spec.ts for the kinds). */
    reward: rewardSpecSchema,
    /** How rewarded rollouts become a training batch (advantage estimator, group filters, length limits). */
    batch: batchConfigSchema.prefault({}),
    /** The policy update (clipped policy-gradient on the LoRA weights). */
    trainer: z
      .strictObject({
        lr: ruled('trainer.lr').default(5e-5),
        /** Passes over each batch. */
        epochs: ruled('trainer.epochs').default(1),
        /** Samples per optimizer step; a batch gives ceil(samples / minibatchSize) steps per epoch. */
        minibatchSize: ruled('trainer.minibatchSize').default(16),
        /** Samples per forward/backward pass; gradients accumulate up to minibatchSize (bounds memory). */
        microBatchSize: ruled('trainer.microBatchSize').default(4),
        /** PPO ratio clip: ratios are kept within [1 - clipLow, 1 + clipHigh] (asymmetric "clip-higher"). */
        clipLow: ruled('trainer.clipLow').default(0.2),
        clipHigh: ruled('trainer.clipHigh').default(0.28),
        /** Truncated importance sampling cap on the trainer/inference probability ratio. */
        tisCap: ruled('trainer.tisCap').default(2),
        /** Weight of the KL penalty to the base model; 0 turns it off. */
        klCoef: ruled('trainer.klCoef').default(0),
        /** token_mean: every token weighs the same; rollout_mean: every rollout weighs the same. */
        lossAggregation: z.enum(['token_mean', 'rollout_mean']).default('token_mean'),
        maxGradNorm: ruled('trainer.maxGradNorm').default(1),
        weightDecay: ruled('trainer.weightDecay').default(0),
        /** The same update computed two ways: fast runs each group's shared prefix once and skips derivable passes; reference is the straightforward one (trainer/README.md). */
        updatePath: z.enum(['fast', 'reference']).default('fast'),
      })
      .prefault({}),
    eval: z
      .strictObject({
        /** Evaluate after every N-th iteration; 0 never evaluates (and never promotes). */
        everyIterations: int(0).default(1),
        /** Eval tasks used each time (the first N of the eval file, so scores are comparable). */
        tasks: int(1).max(100_000).default(8),
        /** Temperature the gateway imposes on evaluation calls: 0 (greedy) makes scores comparable across checkpoints; null keeps the agent's own sampling. */
        temperature: z.number().min(0).max(2).nullable().default(0),
        /** A checkpoint is promoted when its eval score beats the best so far by more than this (negative: a non-inferiority margin, promoting a candidate at most that much worse). */
        promoteMargin: ruled('eval.promoteMargin').default(0),
        /** An evaluation counts only when at least this fraction of its tasks got a score; otherwise it fails and nothing is promoted. */
        minScoredFraction: z.number().gt(0).max(1).default(0.95),
        /** Rounds in which infra-failed or unscorable eval rollouts run again as new attempts before the fraction is checked. */
        retryRounds: int(0).max(10).default(2),
        /**
         * More held-out sets, evaluated beside the main one at every evaluation (base included) and reported per set and
         * per kind, NEVER used for promotion; pinned by content like the task sets (`set` is filled in when the run starts).
         */
        extraSets: z
          .array(
            z
              .strictObject({
                /** Names the set in run-status and the report: 1-32 of [A-Za-z0-9_-]. */
                name: z
                  .string()
                  .regex(
                    /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/,
                    'a set name is 1-32 of [A-Za-z0-9_-], starting with a letter or digit',
                  ),
                /** JSONL file of held-out tasks, relative to where the run is started; may be left out when `set` is given. */
                file: z.string().min(1).optional(),
                /** sha256 of the pinned set; filled in when the run starts, or given to reuse a pinned set (it then wins over file). */
                set: taskSetHashSchema.optional(),
                /** Tasks used each time (the first N of the set); default all. */
                tasks: int(1).max(100_000).optional(),
              })
              .refine((x) => x.file !== undefined || x.set !== undefined, {
                message: 'required: a task file, unless set names a pinned set',
                path: ['file'],
              }),
          )
          .max(8)
          .refine((sets) => new Set(sets.map((x) => x.name)).size === sets.length, 'set names must be unique')
          .default([]),
      })
      .prefault({}),
    /** Prompt optimisation (`volt optimize-prompt`); training runs ignore it. */
    apo: apoConfigSchema.optional(),
    /** The run workflow continues-as-new after this many iterations, keeping its history small. */
    continueAsNewEvery: int(1).max(1000).default(5),
    /** Activity time limits; long steps also heartbeat, so a dead worker is noticed after heartbeatSec. */
    timeouts: z
      .strictObject({
        heartbeatSec: seconds.default(60),
        /** Bound on a whole iteration's rollouts (and on reward and batch steps). */
        rolloutsSec: seconds.default(3600),
        /** Bound on one policy update. */
        updateSec: seconds.default(3600),
      })
      .prefault({}),
  })
  .check((payload) => {
    // Cross-field rules only make sense once every field is valid on its own.
    if (payload.issues.length > 0) return;
    for (const { path, message } of crossFieldProblems(payload.value))
      payload.issues.push({ code: 'custom', path, message, input: payload.value });
  });

/** The parsed, defaulted run config (what workflows and activities receive). */
export type RunConfig = z.output<typeof runConfigSchema>;
/** What an operator writes: defaults may be left out. */
export type RunConfigInput = z.input<typeof runConfigSchema>;

/** Validate a raw run config (JSON from the CLI, a client or the Web UI); throws ConfigError naming each bad path. */
export function parseRunConfig(raw: unknown): Readonly<RunConfig> {
  return parseFrozen(runConfigSchema, raw, 'run config');
}
