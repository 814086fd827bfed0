import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
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

export const RunIdKey = defineSearchAttributeKey('VoltRunId', SearchAttributeType.KEYWORD);
export const IterationKey = defineSearchAttributeKey('VoltIteration', SearchAttributeType.INT);
export const PhaseKey = defineSearchAttributeKey('VoltPhase', SearchAttributeType.KEYWORD);
export const BestScoreKey = defineSearchAttributeKey('VoltBestScore', SearchAttributeType.DOUBLE);
