import { condition, upsertSearchAttributes } from '@temporalio/workflow';
import type { RunConfig } from '../config/run.js';
import { PhaseKey } from './definitions.js';
import type { Phase, RunState, RunStatus } from './types.js';

/** What a training run holds while it runs: read by its query and handlers, moved by its steps. */
export interface RunContext {
  config: RunConfig;
  /** Unset until the base policy is evaluated; a continued run starts with it. */
  state: RunState | undefined;
  phase: Phase;
  paused: boolean;
  /** Hyper-parameter patches are checked against the validated config, never against a raw one. */
  validated: boolean;
  outcome: NonNullable<RunStatus['outcome']>;
  servingBusy: boolean;
}

export const newRunContext = (config: RunConfig, state: RunState | undefined): RunContext => ({
  config,
  state,
  phase: 'validating',
  paused: false,
  validated: false,
  outcome: 'trained',
  servingBusy: false,
});

/** Promotion and rollback both move the served alias: one at a time, in the order they were decided. */
export async function serialised<T>(run: RunContext, fn: () => Promise<T>): Promise<T> {
  await condition(() => !run.servingBusy);
  run.servingBusy = true;
  try {
    return await fn();
  } finally {
    run.servingBusy = false;
  }
}

/** The run's state as the `status` query and the workflow result show it. */
export function runStatus(run: RunContext): RunStatus {
  const { config, state } = run;
  return {
    runId: config.runId,
    iteration: state?.iteration ?? 0,
    iterations: config.iterations,
    phase: run.paused ? 'paused' : run.phase,
    paused: run.paused,
    policy: state?.policy ?? null,
    best: state?.best ?? null,
    baseEval: state?.baseEval ?? null,
    meanRewards: state?.history.map((h) => h.meanReward) ?? [],
    evalScores: state?.history.map((h) => h.evalScore) ?? [],
    history: state?.history ?? [],
    sandbox: config.rollouts.sandbox,
    ...(state?.lineage && { lineage: state.lineage }),
    ...(run.outcome === 'no-new-tasks' && { outcome: run.outcome }),
  };
}

/** The run's last step, whatever ended it. */
export function finishRun(run: RunContext): RunStatus {
  run.phase = 'done';
  upsertSearchAttributes([{ key: PhaseKey, value: 'done' }]);
  return runStatus(run);
}
