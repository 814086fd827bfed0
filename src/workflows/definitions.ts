import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { PolicyRef } from '../contracts/policy.js';
import type { Phase, RunStatus } from './types.js';

export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
/** Sent by a child iteration to its run so one `status` query shows the live phase. */
export const phaseSignal = defineSignal<[{ iteration: number; phase: Phase; detail: string }]>('phase');
export const statusQuery = defineQuery<RunStatus>('status');

/** Hyper-parameters an operator may change between iterations (validated by the update's validator). */
export interface HyperParameterPatch {
  lr?: number;
  klCoef?: number;
  epochs?: number;
  clipLow?: number;
  clipHigh?: number;
  groupSize?: number;
  tasksPerIteration?: number;
  promoteMargin?: number;
}
export const setHyperParametersUpdate = defineUpdate<HyperParameterPatch, [HyperParameterPatch]>('setHyperParameters');

/** Where `rollback` moves the run's best: the base model, the promotion before the current one, or the promotion of an iteration. */
export interface RollbackRequest {
  to: 'base' | 'previous' | number;
}
/** The run's best after the rollback; the next candidate is compared against this score. */
export interface RollbackResult {
  best: { policy: PolicyRef; score: number };
  /** Iteration that promoted it; null for the base model. */
  iteration: number | null;
}
export const rollbackUpdate = defineUpdate<RollbackResult, [RollbackRequest]>('rollback');

export const RunIdKey = defineSearchAttributeKey('VoltRunId', SearchAttributeType.KEYWORD);
export const IterationKey = defineSearchAttributeKey('VoltIteration', SearchAttributeType.INT);
export const PhaseKey = defineSearchAttributeKey('VoltPhase', SearchAttributeType.KEYWORD);
export const BestScoreKey = defineSearchAttributeKey('VoltBestScore', SearchAttributeType.DOUBLE);
export const LineageKey = defineSearchAttributeKey('VoltLineage', SearchAttributeType.KEYWORD);

/**
 * The memo entry (set by `volt train`, `volt optimize-prompt` and schedules from VOLT_DASHBOARD_URL) holding the
 * dashboard's base URL, from which a run links its dashboard page in its Temporal Web current details.
 */
export const DASHBOARD_MEMO = 'voltDashboardUrl';
