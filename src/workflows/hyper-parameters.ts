import type { RunConfig } from '../config/run.js';
import type { HyperParameterPatch } from './definitions.js';

type Check = (v: number) => boolean;
const positive: Check = (v) => v > 0;
const nonNegative: Check = (v) => v >= 0;
const positiveInt: Check = (v) => Number.isInteger(v) && v > 0;
const fraction: Check = (v) => v >= 0 && v < 1;

const rules: Record<keyof HyperParameterPatch, { check: Check; says: string }> = {
  lr: { check: (v) => v > 0 && v < 1, says: 'a number in (0, 1)' },
  klCoef: { check: nonNegative, says: 'a number >= 0' },
  epochs: { check: positiveInt, says: 'a positive integer' },
  clipLow: { check: fraction, says: 'a number in [0, 1)' },
  clipHigh: { check: positive, says: 'a number > 0' },
  groupSize: { check: (v) => Number.isInteger(v) && v >= 2, says: 'an integer >= 2' },
  tasksPerIteration: { check: positiveInt, says: 'a positive integer' },
  promoteMargin: { check: (v) => Number.isFinite(v), says: 'a finite number' },
};

/** Plain checks (no zod inside workflow code); throws an Error naming every bad field, which rejects the update. */
export function validateHyperParameters(patch: HyperParameterPatch): void {
  if (!patch || typeof patch !== 'object') throw new Error('setHyperParameters expects an object');
  const problems: string[] = [];
  for (const [field, value] of Object.entries(patch)) {
    const rule = rules[field as keyof HyperParameterPatch];
    if (!rule) problems.push(`${field}: not a tunable hyper-parameter (tunable: ${Object.keys(rules).join(', ')})`);
    else if (typeof value !== 'number' || !Number.isFinite(value) || !rule.check(value)) problems.push(`${field}: expected ${rule.says}`);
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
