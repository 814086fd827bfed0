import type { RunConfig } from '../config/run.js';
import type { PolicyRef } from '../contracts/policy.js';

export interface EvalResult {
  label: string;
  policy: PolicyRef;
  /** Mean reward over the held-out tasks (accuracy for 0/1 rewards). */
  score: number;
  scored: number;
  infraFailed: number;
  resultKey: string;
}

export interface IterationSummary {
  iteration: number;
  rollouts: number;
  infraFailed: number;
  meanReward: number;
  samples: number;
  tokens: number;
  candidate: PolicyRef | null;
  evalScore: number | null;
  promoted: boolean;
  trainMetrics: Record<string, number> | null;
}

/** A policy that was (or may again become) the run's best: the base model or a promoted candidate. */
export interface Promotion {
  policy: PolicyRef;
  score: number;
  /** Iteration that promoted it; null for the base model. */
  iteration: number | null;
}

/** Small state carried across continue-as-new. */
export interface RunState {
  /** Next iteration to run. */
  iteration: number;
  /** The policy rollouts are sampled from (on-policy: the latest update). */
  policy: PolicyRef;
  /** The promoted checkpoint and its held-out score. */
  best: { policy: PolicyRef; score: number };
  history: IterationSummary[];
  /** The base model and every promotion so far, oldest first: what `rollback` can return to (absent in runs started before it). */
  promotions?: Promotion[];
  /** Which of `promotions` is the best now. */
  bestIteration?: number | null;
}

export interface TrainingIterationInput {
  config: RunConfig;
  iteration: number;
  policy: PolicyRef;
  best: { policy: PolicyRef; score: number };
  /** 'run': the iteration only evaluates its candidate and the run decides promotion (it owns "best"); absent: the iteration promotes. */
  promotion?: 'run';
}

export interface TrainingIterationResult {
  summary: IterationSummary;
  policy: PolicyRef;
  best: { policy: PolicyRef; score: number };
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
  meanRewards: number[];
  evalScores: (number | null)[];
  history: IterationSummary[];
  /** The run's rollouts.sandbox; 'none' means agents run unisolated (absent in results of older runs). */
  sandbox?: 'bubblewrap' | 'none';
}
