import type { RunConfig } from '../config/run.js';
import { crossFieldProblems, describeRule, numberRules, satisfies, type RuledPath } from '../config/run-rules.js';
import type { HyperParameterPatch } from './definitions.js';

/** Where each tunable lives in the run config; its bounds are the run config's own (src/config/run-rules.ts). */
const tunables: Record<keyof HyperParameterPatch, RuledPath> = {
  lr: 'trainer.lr',
  klCoef: 'trainer.klCoef',
  epochs: 'trainer.epochs',
  clipLow: 'trainer.clipLow',
  clipHigh: 'trainer.clipHigh',
  groupSize: 'rollouts.groupSize',
  tasksPerIteration: 'rollouts.tasksPerIteration',
  promoteMargin: 'eval.promoteMargin',
};

/**
 * The update's validator (no zod inside workflow code): the config with the patch applied must pass the run
 * config's own rules, field bounds and cross-field rules alike, so a bad value is rejected here and never fails
 * the next iteration. Throws an Error naming every bad field, which rejects the update.
 */
export function validateHyperParameters(config: RunConfig, patch: HyperParameterPatch): void {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch))
    throw new Error('setHyperParameters expects an object');
  const problems: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    const path = tunables[field as keyof HyperParameterPatch] as RuledPath | undefined;
    if (!path) problems.push(`${field}: not a tunable hyper-parameter (tunable: ${Object.keys(tunables).join(', ')})`);
    else if (!satisfies(numberRules[path], value))
      problems.push(`${field} (${path}): expected ${describeRule(numberRules[path])}, got ${JSON.stringify(value)}`);
  }
  if (problems.length === 0) {
    for (const p of crossFieldProblems(applyHyperParameters(config, patch)))
      problems.push(`${p.path.join('.')}: ${p.message}`);
  }
  if (problems.length) throw new Error(`invalid hyper-parameters: ${problems.join('; ')}`);
}

export function applyHyperParameters(config: RunConfig, patch: HyperParameterPatch): RunConfig {
  return {
    ...config,
    trainer: {
      ...config.trainer,
      ...(patch.lr !== undefined && { lr: patch.lr }),
      ...(patch.klCoef !== undefined && { klCoef: patch.klCoef }),
      ...(patch.epochs !== undefined && { epochs: patch.epochs }),
      ...(patch.clipLow !== undefined && { clipLow: patch.clipLow }),
      ...(patch.clipHigh !== undefined && { clipHigh: patch.clipHigh }),
    },
    rollouts: {
      ...config.rollouts,
      ...(patch.groupSize !== undefined && { groupSize: patch.groupSize }),
      ...(patch.tasksPerIteration !== undefined && { tasksPerIteration: patch.tasksPerIteration }),
    },
    eval: { ...config.eval, ...(patch.promoteMargin !== undefined && { promoteMargin: patch.promoteMargin }) },
  };
}
