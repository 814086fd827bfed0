import { z } from 'zod';
import { agentEnvNameSchema } from '../contracts/env-name.js';
import { rolloutRefSchema, type RolloutRef, type RunnerResult } from '../contracts/rollout.js';
import { workdirPathSchema } from '../contracts/task.js';
import type { RunInWorkdir } from '../rewards/run-process.js';
import type { WorkdirFiles } from '../rewards/workdir-files.js';
import { rolloutLimitsSchema, sandboxKindSchema } from './sandbox-spec.js';

/** Variables an agent gets from the worker's environment unless the spec names its own list. */
export const DEFAULT_ENV_ALLOW_LIST: readonly string[] = Object.freeze([
  'PATH',
  'HOME',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'TERM',
  'USER',
  'LOGNAME',
  'SHELL',
]);

/** One rollout attempt, as the rollout activity hands it to a runner. Serialisable (goes through Temporal). */
export const rolloutSpecSchema = z.object({
  ref: rolloutRefSchema,
  taskId: z.string().min(1),
  groupId: z.string().min(1),
  mode: z.enum(['train', 'eval']),
  /** The task's `input`; the agent sees `{ id: taskId, input }` as VOLT_TASK and in VOLT_TASK_FILE. */
  taskInput: z.record(z.string(), z.unknown()),
  agent: z.object({
    // argv: the program must be named; later arguments may be empty strings (`node -e ''`).
    command: z
      .array(z.string())
      .min(1)
      .refine((a) => a[0] !== '', { message: 'the program (argv[0]) must not be empty', path: [0] }),
    /** Working directory of the agent process; the fresh per-attempt workdir when absent. */
    cwd: z.string().min(1).optional(),
    /** Absolute directories the sandboxed agent may read besides the open root (its code where the sandbox hides). */
    readOnly: z.array(z.string().startsWith('/')).optional(),
  }),
  gateway: z.object({
    /** `<gateway>/r/<token>/v1`, becomes OPENAI_BASE_URL (and, without `/v1`, ANTHROPIC_BASE_URL). */
    baseUrl: z.url(),
    token: z.string().min(1),
  }),
  timeoutMs: z.number().int().positive(),
  envAllowList: z.array(agentEnvNameSchema).optional(),
  /** Fixed variables from the run config (e.g. AGENT_TEMPERATURE); the contract variables always win over them. */
  env: z.record(agentEnvNameSchema, z.string()).optional(),
  /** Isolation of a local attempt (docs/sandbox.md); Kubernetes pods are isolated by the cluster instead. */
  sandbox: sandboxKindSchema.default('bubblewrap'),
  limits: rolloutLimitsSchema.prefault({}),
  /** The task's hidden files: written into the workdir only after the agent exited, for the scoring step (never seen by the agent). */
  hiddenFiles: z.record(workdirPathSchema, z.string()).default({}),
  /**
   * The reward's checks over the workdir, for runners that cannot run them on demand after the agent (Kubernetes
   * runs them in the pod's scoring step); the local runner runs whatever the reward asks instead.
   */
  scoringCommands: z
    .array(
      z.object({
        argv: z.array(z.string().min(1)).min(1),
        timeoutMs: z.number().int().positive(),
        /** What the check reads on stdin (sqlite_state's queries). */
        input: z.string().optional(),
      }),
    )
    .default([]),
  /** The task's setup argv, for runners that build the workdir where the agent runs (a pod); locally prepareWorkdir runs it. */
  setup: z.array(z.string().min(1)).min(1).nullable().default(null),
  /** Report the workdir's file hashes before and after the agent (protected files, guards) when it is not on this host. */
  reportFiles: z.boolean().default(false),
});

export type RolloutSpecInput = z.input<typeof rolloutSpecSchema>;
export type RolloutSpec = z.output<typeof rolloutSpecSchema>;

/** Called with the fresh workdir before the agent starts, e.g. so a reward can snapshot files. */
export type PrepareWorkdir = (workdir: string, spec: RolloutSpec) => Promise<unknown>;

/**
 * Called once the agent has exited and the hidden files are in place, before the workdir is removed: where
 * file-reading rewards are scored, through `exec`, which runs a check in the attempt's own sandbox, and `files`,
 * the workdir's files as the runner reported them when they are not on this host.
 */
export type AfterAgent = (
  workdir: string,
  result: RunnerResult,
  exec: RunInWorkdir,
  files?: WorkdirFiles,
) => Promise<unknown>;

export interface RunOptions {
  prepareWorkdir?: PrepareWorkdir;
  /** A runner that builds the workdir elsewhere (a pod) reports its files as they were before the agent started. */
  filesBefore?: (files: WorkdirFiles) => Promise<unknown>;
  /** Not called for infra_failed or cancelled attempts; a rejection rejects run() after cleanup. */
  afterAgent?: AfterAgent;
}

/** Where rollout logs go; the object store in production (`putBytes`). */
export interface LogSink {
  put(key: string, bytes: Uint8Array): Promise<void>;
}

/** Runs one attempt. Resolves with an outcome for everything but cancellation, which rejects after cleanup. */
export interface RolloutRunner {
  run(spec: RolloutSpecInput, signal: AbortSignal, options?: RunOptions): Promise<RunnerResult>;
  /** Frees what an iteration's rollouts left on this machine (their rollout directories), once their rewards are stored. */
  release?(runId: string, iteration: number, rolloutIds: readonly string[]): Promise<void>;
  /** Kills agents a dead worker left running on this machine and closes their tokens; returns how many. */
  reapAbandoned?(closeToken: (token: string) => Promise<unknown>): Promise<number>;
}

/** The rejection of `run` when its signal was aborted; the agent was stopped before it was raised. */
export class RolloutCancelledError extends Error {
  constructor(ref: RolloutRef, reason: unknown) {
    super(`rollout ${ref.runId}/${ref.iteration}/${ref.rolloutId}/attempt-${ref.attempt} cancelled: ${String(reason)}`);
    this.name = 'AbortError';
  }
}

/** The VOLT_TASK document an agent receives: only the id and the input, never the reference. */
export const agentTaskJson = (spec: RolloutSpec): string => JSON.stringify({ id: spec.taskId, input: spec.taskInput });
