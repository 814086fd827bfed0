import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseRunConfig, runConfigSchema } from '../../src/config/run.js';
import { numberRules, satisfies, type NumberRule, type RuledPath } from '../../src/config/run-rules.js';
import { validateHyperParameters } from '../../src/workflows/hyper-parameters.js';

const root = path.resolve(import.meta.dirname, '../..');
const base = {
  runId: 'r',
  agent: { command: ['true'] },
  tasks: { trainFile: 'a', evalFile: 'b' },
  reward: { kind: 'numeric_match' },
};
const tunable: Partial<Record<RuledPath, string>> = {
  'trainer.lr': 'lr',
  'trainer.klCoef': 'klCoef',
  'trainer.epochs': 'epochs',
  'trainer.clipLow': 'clipLow',
  'trainer.clipHigh': 'clipHigh',
  'rollouts.groupSize': 'groupSize',
  'rollouts.tasksPerIteration': 'tasksPerIteration',
  'eval.promoteMargin': 'promoteMargin',
};

/** Values on and just past every bound of a rule, plus a non-integer for integer rules. */
function probes(rule: NumberRule): number[] {
  const step = (x: number) => (rule.int ? 1 : Math.max(1e-9, Math.abs(x) * 1e-9));
  const out: number[] = [];
  if (rule.gt !== undefined) out.push(rule.gt, rule.gt + step(rule.gt));
  if (rule.min !== undefined) out.push(rule.min, rule.min - step(rule.min));
  if (rule.lt !== undefined) out.push(rule.lt, rule.lt - step(rule.lt));
  if (rule.max !== undefined) out.push(rule.max, rule.max + step(rule.max));
  if (rule.int) out.push((rule.min ?? 1) + 0.5);
  return out;
}

function withValue(p: string, value: number): Record<string, unknown> {
  const [head, ...rest] = p.split('.');
  const config = structuredClone(base) as Record<string, unknown>;
  let node = config;
  for (const k of [head!, ...rest.slice(0, -1)]) node = (node[k] ??= {}) as Record<string, unknown>;
  node[rest.at(-1)!] = value;
  return config;
}

const cases = (Object.entries(numberRules) as [RuledPath, NumberRule][]).flatMap(([p, rule]) =>
  probes(rule).map((value) => ({ path: p, rule, value })),
);

describe('one source of run-config rules', () => {
  it('the run config schema applies exactly the shared rule to every ruled field', () => {
    for (const c of cases) {
      const result = runConfigSchema.safeParse(withValue(c.path, c.value));
      // Cross-field rules (custom issues) are checked below; here only the field's own bounds count.
      const rejected =
        !result.success && result.error.issues.some((i) => i.code !== 'custom' && i.path.join('.') === c.path);
      assert.equal(!rejected, satisfies(c.rule, c.value), `${c.path} = ${c.value}`);
    }
  });

  it('setHyperParameters applies the same rule to every tunable field', () => {
    const config = parseRunConfig(base);
    for (const c of cases.filter((x) => tunable[x.path])) {
      const name = tunable[c.path]!;
      let message = '';
      try {
        validateHyperParameters(config, { [name]: c.value });
      } catch (e) {
        message = (e as Error).message;
      }
      assert.equal(!message.includes(`${name} (`), satisfies(c.rule, c.value), `${name} = ${c.value}: ${message}`);
    }
  });

  it("the trainer's own config checks accept and reject exactly the same values", () => {
    const trainerCases = cases.filter((c) => c.rule.trainer);
    assert.ok(trainerCases.length >= 20);
    const script = [
      'import json, sys',
      'from volt_trainer.config import load_config',
      'def ok(field, value):',
      '    try:',
      '        load_config(None, {field: value})',
      '        return True',
      '    except ValueError:',
      '        return False',
      'print(json.dumps([ok(f, v) for f, v in json.load(sys.stdin)]))',
    ].join('\n');
    const input = JSON.stringify(trainerCases.map((c) => [c.rule.trainer, c.value]));
    const verdicts = JSON.parse(
      execFileSync(path.join(root, '.venv/bin/python'), ['-c', script], { input, encoding: 'utf8' }),
    ) as boolean[];
    trainerCases.forEach((c, i) =>
      assert.equal(verdicts[i], satisfies(c.rule, c.value), `trainer ${c.rule.trainer} = ${c.value} (${c.path})`),
    );
  });

  it("the trainer's update_path takes exactly the run config's trainer.updatePath choices and defaults alike", () => {
    const field = runConfigSchema.shape.trainer.unwrap().shape.updatePath;
    const choices = field.unwrap().options;
    const script = [
      'import json, sys, typing',
      'from volt_trainer.config import TrainConfig, UpdatePath, load_config',
      'def ok(value):',
      '    try:',
      '        load_config(None, {"update_path": value})',
      '        return True',
      '    except ValueError:',
      '        return False',
      'print(json.dumps({"choices": list(typing.get_args(UpdatePath)), "default": TrainConfig().update_path, "bogus": ok("turbo")}))',
    ].join('\n');
    const trainer = JSON.parse(
      execFileSync(path.join(root, '.venv/bin/python'), ['-c', script], { encoding: 'utf8' }),
    ) as {
      choices: string[];
      default: string;
      bogus: boolean;
    };
    assert.deepEqual([...trainer.choices].sort(), [...choices].sort());
    assert.equal(trainer.default, parseRunConfig(base).trainer.updatePath);
    assert.equal(trainer.default, 'fast');
    assert.equal(trainer.bogus, false);
  });

  it('the merged config is checked: a groupSize below batch.minGroupSize is rejected at the update', () => {
    const config = parseRunConfig({ ...base, rollouts: { groupSize: 4 }, batch: { minGroupSize: 3 } });
    assert.throws(
      () => validateHyperParameters(config, { groupSize: 2 }),
      /batch\.minGroupSize: must be <= rollouts\.groupSize \(2\)/,
    );
    assert.throws(() => validateHyperParameters(config, { clipLow: 0 }), /clipLow \(trainer\.clipLow\)/);
    validateHyperParameters(config, { groupSize: 3, clipLow: 0.1 });
  });
});
