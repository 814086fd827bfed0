import { defineQuery } from '@temporalio/workflow';

/** Where a promptOptimization run is; the same `status` query and VoltPhase search attribute as training. */
export type ApoPhase =
  | 'validating'
  | 'evaluating-before'
  | 'scoring-start'
  | 'training-rollouts'
  | 'proposing'
  | 'scoring-candidates'
  | 'scoring-leader'
  | 'promoting'
  | 'evaluating-after'
  | 'paused'
  | 'done';

/** A prompt version (0 = the agent's own prompt) with a mean reward. */
export interface VersionScore {
  version: number;
  score: number;
}

export interface ApoRoundSummary {
  round: number;
  /** Beam members that ran the training batch (the parents of this round). */
  parents: number[];
  /** Mean reward of the parents' training rollouts (the agent's own sampling). */
  trainMeanReward: number;
  trainRollouts: number;
  /** Versions proposed this round, and proposals the proposers skipped (unparseable optimiser answers). */
  children: number[];
  skipped: string[];
  /** Parents and children on this round's validation batch (greedy), best first. */
  candidates: VersionScore[];
  /** The beam kept for the next round. */
  beam: number[];
  /** The leader on the full validation set. */
  leader: VersionScore;
  /** Best on the full validation set so far (ties keep the earlier one). */
  best: VersionScore;
}

/** What `status` answers and what the workflow returns; `kind` tells it from a training run's status. */
export interface ApoStatus {
  kind: 'promptOptimization';
  runId: string;
  /** Rounds completed. */
  round: number;
  rounds: number;
  phase: ApoPhase;
  paused: boolean;
  beam: number[];
  /** Full-validation score of the agent's own prompt (version 0), the promotion baseline. */
  baselineScore: number | null;
  best: VersionScore | null;
  history: ApoRoundSummary[];
  /** Held-out (tasks.evalFile) mean reward of the agent's own prompt and of the active prompt at the end. */
  heldOut: { before: number | null; after: number | null; afterVersion: number | null };
  /** null until the promotion step ran. */
  promotion: { promoted: boolean; activeVersion: number; activeScore: number | null; reason: string } | null;
}

/** The same query name as training (`status`), so `temporal workflow query --name status` works for both. */
export const apoStatusQuery = defineQuery<ApoStatus>('status');
