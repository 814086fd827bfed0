/**
 * The one description of a run config's numeric bounds and cross-field rules, as plain data and functions (no zod,
 * so workflow code can use it too): `runConfigSchema` builds its number fields from it, the `setHyperParameters`
 * validator checks the merged config with it, and test/config/run-rules.test.ts feeds every rule to the trainer.
 */

/** A number's bounds: `gt`/`lt` exclusive, `min`/`max` inclusive; `int` for integers. Always finite. */
export interface NumberRule {
  int?: boolean;
  gt?: number;
  min?: number;
  lt?: number;
  max?: number;
  /** The trainer's TrainConfig field (trainer/volt_trainer/config.py) that receives this value, if one does. */
  trainer?: string;
}

export const numberRules = {
  'model.lora.rank': { int: true, min: 1, max: 256, trainer: 'lora_r' },
  'model.lora.alpha': { int: true, min: 1, max: 4096, trainer: 'lora_alpha' },
  'model.lora.dropout': { min: 0, lt: 1, trainer: 'lora_dropout' },
  'rollouts.groupSize': { int: true, min: 2, max: 1024 },
  'rollouts.tasksPerIteration': { int: true, min: 1, max: 100_000 },
  'trainer.lr': { gt: 0, lt: 1, trainer: 'lr' },
  'trainer.epochs': { int: true, min: 1, max: 100, trainer: 'epochs' },
  'trainer.minibatchSize': { int: true, min: 1, max: 65_536 },
  'trainer.microBatchSize': { int: true, min: 1, max: 4096, trainer: 'micro_batch_size' },
  'trainer.clipLow': { gt: 0, lt: 1, trainer: 'clip_low' },
  'trainer.clipHigh': { gt: 0, trainer: 'clip_high' },
  'trainer.tisCap': { min: 1, trainer: 'tis_cap' },
  'trainer.klCoef': { min: 0, trainer: 'kl_coef' },
  'trainer.maxGradNorm': { gt: 0, trainer: 'max_grad_norm' },
  'trainer.weightDecay': { min: 0, trainer: 'weight_decay' },
  'eval.promoteMargin': { min: -1, max: 1 },
} as const satisfies Record<string, NumberRule>;

export type RuledPath = keyof typeof numberRules;

/** What a rule allows, in words ("an integer >= 1 and <= 100"). */
export function describeRule(rule: NumberRule): string {
  const bounds = [
    rule.gt !== undefined && `> ${rule.gt}`,
    rule.min !== undefined && `>= ${rule.min}`,
    rule.lt !== undefined && `< ${rule.lt}`,
    rule.max !== undefined && `<= ${rule.max}`,
  ].filter(Boolean);
  return `${rule.int ? 'an integer' : 'a finite number'}${bounds.length ? ` ${bounds.join(' and ')}` : ''}`;
}

/** Whether `value` satisfies the rule. */
export function satisfies(rule: NumberRule, value: unknown): boolean {
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  if (rule.int && !Number.isInteger(value)) return false;
  if (rule.gt !== undefined && !(value > rule.gt)) return false;
  if (rule.min !== undefined && !(value >= rule.min)) return false;
  if (rule.lt !== undefined && !(value < rule.lt)) return false;
  if (rule.max !== undefined && !(value <= rule.max)) return false;
  return true;
}

/** The fields the cross-field rules read (a RunConfig has them all). */
export interface CrossFieldView {
  agent: { timeoutSec: number };
  rollouts: { groupSize: number; runner: string; kubernetes?: unknown };
  batch: { minGroupSize: number; warmStartIterations: number };
  trainer: { minibatchSize: number; microBatchSize: number };
  apo?: { strategies: readonly string[]; optimizer?: unknown } | undefined;
  timeouts: { rolloutsSec: number };
  tasks: { trainFile?: string | undefined; trainPrefix?: string | undefined };
  lineage?: string | undefined;
  deploy?: unknown;
  teacher?: unknown;
  team?: { roles: readonly { name: string; policy: unknown }[] } | undefined;
}

/** Rules across fields, checked once every field is valid on its own; each problem names the field to change. */
export function crossFieldProblems(c: CrossFieldView): { path: string[]; message: string }[] {
  const problems: { path: string[]; message: string }[] = [];
  const fail = (path: string[], message: string) => problems.push({ path, message });
  if (c.rollouts.runner === 'kubernetes' && !c.rollouts.kubernetes)
    fail(['rollouts', 'kubernetes'], "required when rollouts.runner is 'kubernetes'");
  if (c.batch.minGroupSize > c.rollouts.groupSize) {
    fail(
      ['batch', 'minGroupSize'],
      `must be <= rollouts.groupSize (${c.rollouts.groupSize}), or every group is dropped`,
    );
  }
  if (c.trainer.microBatchSize > c.trainer.minibatchSize) {
    fail(['trainer', 'microBatchSize'], `must be <= trainer.minibatchSize (${c.trainer.minibatchSize})`);
  }
  if (c.apo?.strategies.includes('textual_gradient') && !c.apo.optimizer) {
    fail(['apo', 'optimizer'], "required when apo.strategies includes 'textual_gradient'");
  }
  if (c.tasks.trainFile && c.tasks.trainPrefix)
    fail(['tasks', 'trainPrefix'], 'give tasks.trainFile or tasks.trainPrefix, not both');
  if (c.deploy && !c.lineage) fail(['deploy'], "a deploy alias serves a lineage's current policy: set `lineage` too");
  if (c.teacher && c.batch.warmStartIterations < 1)
    fail(['batch', 'warmStartIterations'], 'must be >= 1 with a teacher: the teacher serves the warm-start iterations');
  const trained = c.team?.roles.filter((r) => r.policy === 'trained').map((r) => r.name) ?? [];
  if (trained.length > 1 && c.lineage)
    fail(
      ['lineage'],
      `a lineage keeps one current policy; this team trains ${trained.length} (${trained.join(', ')}): train one role, or leave lineage out`,
    );
  if (c.timeouts.rolloutsSec < c.agent.timeoutSec)
    fail(['timeouts', 'rolloutsSec'], `must be >= agent.timeoutSec (${c.agent.timeoutSec})`);
  return problems;
}
