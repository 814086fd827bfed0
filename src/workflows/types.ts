import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';
import type { ScoreCounts } from '../rewards/by-kind.js';

export interface EvalResult {
  label: string;
  policy: PolicyRef;
  /** Mean reward over the scored held-out tasks (accuracy for 0/1 rewards): rewardSum / scored. */
  score: number;
  rewardSum: number;
  scored: number;
  /** Tasks evaluated (the denominator of the scored fraction). */
  tasks: number;
  infraFailed: number;
  resultKey: string;
  /** The counts per task kind, when the tasks have kinds. */
  byKind?: Record<string, ScoreCounts>;
  /** eval.extraSets, scored beside the main set (never used for promotion). */
  extraSets?: ExtraSetResult[];
}

/** One of eval.extraSets, scored like the main set; `score` is null (and `error` says why) when too few tasks were scored. */
export interface ExtraSetResult extends ScoreCounts {
  name: string;
  score: number | null;
  resultKey: string;
  error: string | null;
  byKind?: Record<string, ScoreCounts>;
}

/** An evaluation's counts as a run keeps them (base and per iteration). */
export type EvalCounts = ScoreCounts & { byKind?: Record<string, ScoreCounts>; extraSets?: ExtraSetResult[] };
/** The base policy's evaluation as the run keeps it. */
export type BaseEval = EvalCounts & { score: number };

export interface IterationSummary {
  iteration: number;
  rollouts: number;
  infraFailed: number;
  meanReward: number;
  samples: number;
  tokens: number;
  candidate: PolicyRef | null;
  evalScore: number | null;
  /** The evaluation's numerator and denominator; null when the candidate was not evaluated or its evaluation did not count. */
  eval: EvalCounts | null;
  /** Why the candidate's evaluation did not count (too few tasks scored): nothing was promoted. */
  evalError: string | null;
  promoted: boolean;
  trainMetrics: Record<string, number> | null;
  /** What the update optimised: `sft` in a rejection-sampling iteration (batch.warmStartIterations), else `policy_gradient`. */
  objective?: 'policy_gradient' | 'sft';
  /** rollouts.dynamicSampling: the extra rounds it ran; null when it is off. */
  dynamicSampling: DynamicSamplingSummary | null;
  /** Seconds spent in each phase (workflow time; dynamic sampling's extra rounds count as rollouts) and when the iteration ended. */
  timeline: IterationTimeline;
  /** A team training an adapter per role: each trained role's batch and update (candidate null: no samples, adapter kept). */
  roles?: Record<string, RoleUpdate>;
}

/** One trained role's part of an iteration. */
export interface RoleUpdate {
  samples: number;
  tokens: number;
  candidate: PolicyRef | null;
  trainMetrics: Record<string, number> | null;
}

/** The phases of an iteration that take time, timed from the workflow's own clock (replay-safe). */
export type TimedPhase = 'sampling-tasks' | 'rollouts' | 'rewards' | 'batch' | 'update' | 'evaluating';
export interface IterationTimeline {
  seconds: Partial<Record<TimedPhase, number>>;
  /** ISO time the iteration ended. */
  endedAt: string;
}

/** What dynamic sampling did in one iteration: informative groups wanted, had before and after the extra rounds. */
export interface DynamicSamplingSummary {
  wanted: number;
  informativeBefore: number;
  informative: number;
  extraRounds: number;
  extraGroups: number;
  extraRollouts: number;
}

/** A policy that was (or may again become) the run's best: the base model or a promoted candidate. */
export interface Promotion {
  policy: PolicyRef;
  score: number;
  /** Iteration that promoted it; null for the base model. */
  iteration: number | null;
}

/** Where a run started and what it had to beat (model.startFrom / lineage), with what it took from a task source. */
export interface RunLineage {
  /** The lineage the run belongs to; null for a run that only set model.startFrom or tasks.trainPrefix. */
  name: string | null;
  startedFrom: PolicyRef;
  /** The policy candidates were compared against (the lineage's current policy), evaluated in this run. */
  incumbent: PolicyRef;
  incumbentScore: number | null;
  /** The deploy alias promotion moves (deploy.alias). */
  alias: string | null;
  /** For a tasks.trainPrefix run: task ids new to the lineage, ids replayed from older files, and the new files. */
  newTasks: string[];
  replayTasks: string[];
  taskFiles: string[];
}

/** Small state carried across continue-as-new. */
export interface RunState {
  /** Next iteration to run. */
  iteration: number;
  /** The policy rollouts are sampled from (on-policy: the latest update). */
  policy: PolicyRef;
  /** The promoted checkpoint and its held-out score. */
  best: { policy: PolicyRef; score: number };
  /** The base policy's evaluation: numerator and denominator of its score; null with evaluation off. */
  baseEval: BaseEval | null;
  history: IterationSummary[];
  /** The base model and every promotion so far, oldest first: what `rollback` can return to. */
  promotions: Promotion[];
  /** Which of `promotions` is the best now (null: the base model). */
  bestIteration: number | null;
  /** Set when the run started from a stored policy or belongs to a lineage. */
  lineage?: RunLineage;
}

export interface TrainingIterationInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
}

/** The iteration's summary and the policy the next one samples from; the run decides promotion (it owns "best"). */
export interface TrainingIterationResult {
  summary: IterationSummary;
  policy: PolicyRef;
}

export interface EvaluationInput {
  config: RunConfig;
  iteration: number;
  label: string;
  policy: PolicyRef;
}

export type Phase =
  | 'validating'
  | 'evaluating-base'
  | 'sampling-tasks'
  | 'rollouts'
  | 'rewards'
  | 'batch'
  | 'update'
  | 'evaluating'
  | 'promoting'
  | 'paused'
  | 'done';

export interface RunStatus {
  runId: string;
  iteration: number;
  iterations: number;
  phase: Phase;
  paused: boolean;
  policy: PolicyRef | null;
  best: { policy: PolicyRef; score: number } | null;
  baseEval: BaseEval | null;
  meanRewards: number[];
  evalScores: (number | null)[];
  history: IterationSummary[];
  /** The run's rollouts.sandbox; 'none' means agents run unisolated. */
  sandbox: 'bubblewrap' | 'none';
  /** Started from / compared against / tasks taken (runs with model.startFrom, lineage or tasks.trainPrefix). */
  lineage?: RunLineage | null;
  /** 'no-new-tasks': a tasks.trainPrefix run found nothing its lineage had not trained on and ended at once. */
  outcome?: 'trained' | 'no-new-tasks';
}
