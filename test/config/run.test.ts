import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config/errors.js';
import { parseRunConfig, type RunConfigInput } from '../../src/config/run.js';
import { DEFAULT_ENV_ALLOW_LIST } from '../../src/rollouts/spec.js';

const minimal = (): RunConfigInput => ({
  runId: 'demo-1',
  agent: { command: ['node', 'examples/ts-agent/agent.mjs'] },
  tasks: { trainFile: 'examples/tasks/train.jsonl', evalFile: 'examples/tasks/eval.jsonl' },
  reward: { kind: 'numeric_match' },
});

/** Parse and return the paths ConfigError named (fails the test if it did not throw one). */
function badPaths(raw: unknown): string[] {
  try {
    parseRunConfig(raw);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.match(err.message, /^invalid run config: /);
    return err.issues.map((i) => i.path);
  }
  assert.fail('parseRunConfig accepted an invalid config');
}

void describe('run config', () => {
  void it('fills CPU-demo defaults around a minimal config and freezes the result', () => {
    const c = parseRunConfig(minimal());
    assert.equal(c.model.base, 'smollm2-135m-instruct');
    assert.deepEqual(c.model.lora, { rank: 8, alpha: 16, dropout: 0, targetModules: ['q_proj', 'v_proj'] });
    assert.deepEqual(c.agent.envAllowList, [...DEFAULT_ENV_ALLOW_LIST]);
    assert.equal(c.agent.timeoutSec, 300);
    assert.deepEqual(c.rollouts, {
      groupSize: 4,
      tasksPerIteration: 4,
      concurrency: 2,
      runner: 'local',
      maxAttempts: 3,
      sandbox: 'bubblewrap',
      limits: { memoryMb: 2048, processes: 512, openFiles: 1024, cpuSec: null },
    });
    assert.equal(c.batch.estimator, 'grpo');
    assert.equal(c.trainer.lossAggregation, 'token_mean');
    assert.equal(c.reward.kind, 'numeric_match');
    assert.equal(c.eval.everyIterations, 1);
    assert.equal(c.timeouts.heartbeatSec, 60);
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.trainer) && Object.isFrozen(c.model.lora.targetModules));
    assert.throws(() => {
      (c.trainer as { lr: number }).lr = 1;
    }, TypeError);
  });

  void it('keeps explicit values, including other reward kinds from src/rewards', () => {
    const c = parseRunConfig({
      ...minimal(),
      seed: 7,
      iterations: 10,
      rollouts: { groupSize: 8, runner: 'local' },
      batch: { estimator: 'rloo', overLength: 'drop' },
      trainer: { lr: 1e-4, lossAggregation: 'rollout_mean', clipHigh: 0.3 },
      reward: { kind: 'weighted_sum', parts: { exact: { kind: 'string_match' }, fmt: { kind: 'agent_emitted' } } },
    });
    assert.equal(c.rollouts.groupSize, 8);
    assert.equal(c.rollouts.tasksPerIteration, 4);
    assert.equal(c.batch.estimator, 'rloo');
    assert.equal(c.trainer.lr, 1e-4);
    assert.equal(c.trainer.epochs, 1);
    assert.equal(c.reward.kind, 'weighted_sum');
  });

  void it('names the path of each bad field', () => {
    assert.deepEqual(badPaths({ ...minimal(), rollouts: { groupSize: -2 } }), ['rollouts.groupSize']);
    assert.deepEqual(badPaths({ ...minimal(), agent: {} }), ['agent.command']);
    assert.deepEqual(badPaths({ ...minimal(), agent: { command: [] } }), ['agent.command']);
    assert.deepEqual(badPaths({ ...minimal(), trainer: { lossAggregation: 'sum', clipLow: 1.5 } }).sort(), [
      'trainer.clipLow',
      'trainer.lossAggregation',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), reward: { kind: 'telepathy' } }), ['reward.kind']);
    assert.deepEqual(badPaths({ ...minimal(), batch: { estimator: 'ppo' } }), ['batch.estimator']);
    const { tasks: _tasks, ...noTasks } = minimal();
    assert.deepEqual(badPaths(noTasks), ['tasks']);
    assert.deepEqual(badPaths(null), ['(root)']);
  });

  void it('takes a task set by file or by the hash of a pinned set, and needs one of them for each', () => {
    const hash = 'a'.repeat(64);
    const pinnedOnly = parseRunConfig({ ...minimal(), tasks: { trainSet: hash, evalSet: hash } });
    assert.deepEqual(pinnedOnly.tasks, { trainSet: hash, evalSet: hash, replayShare: 0.25 });
    assert.deepEqual(badPaths({ ...minimal(), tasks: { evalSet: hash } }), ['tasks.trainFile']);
    assert.deepEqual(badPaths({ ...minimal(), tasks: { trainFile: 't.jsonl' } }), ['tasks.evalFile']);
    assert.deepEqual(
      badPaths({ ...minimal(), tasks: { trainFile: 't.jsonl', evalFile: 'e.jsonl', trainSet: 'abc' } }),
      ['tasks.trainSet'],
    );
  });

  void it('rejects unsafe run ids', () => {
    for (const runId of ['../x', 'a/b', '', 'x'.repeat(200), 42])
      assert.deepEqual(badPaths({ ...minimal(), runId }), ['runId']);
  });

  void it('rejects unknown keys so typos do not fall back to defaults', () => {
    const paths = badPaths({ ...minimal(), rollouts: { groupsize: 8 } });
    assert.deepEqual(paths, ['rollouts']);
  });

  void it('refuses to pass VOLT_* secrets or malformed names to the agent', () => {
    assert.deepEqual(
      badPaths({ ...minimal(), agent: { command: ['a'], envAllowList: ['PATH', 'VOLT_S3_SECRET_KEY', 'A-B'] } }),
      ['agent.envAllowList.1', 'agent.envAllowList.2'],
    );
  });

  void it('checks fields against each other', () => {
    assert.deepEqual(badPaths({ ...minimal(), rollouts: { runner: 'kubernetes' } }), ['rollouts.kubernetes']);
    assert.deepEqual(badPaths({ ...minimal(), rollouts: { groupSize: 2 }, batch: { minGroupSize: 3 } }), [
      'batch.minGroupSize',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), trainer: { minibatchSize: 2, microBatchSize: 4 } }), [
      'trainer.microBatchSize',
    ]);
    assert.deepEqual(
      badPaths({ ...minimal(), agent: { command: ['a'], timeoutSec: 900 }, timeouts: { rolloutsSec: 600 } }),
      ['timeouts.rolloutsSec'],
    );
    const k = parseRunConfig({
      ...minimal(),
      rollouts: { runner: 'kubernetes', kubernetes: { image: 'ghcr.io/example/agent:1' } },
    });
    assert.equal(k.rollouts.kubernetes?.namespace, 'volt-rollouts');
  });
  void it('fills the apo section and requires an optimiser for textual gradients', () => {
    const c = parseRunConfig({ ...minimal(), apo: {} });
    assert.equal(c.apo?.beamWidth, 2);
    assert.deepEqual(c.apo?.strategies, ['bootstrap']);
    assert.equal(c.apo?.optimizer, undefined);
    assert.deepEqual(badPaths({ ...minimal(), apo: { strategies: ['textual_gradient'] } }), ['apo.optimizer']);
    assert.deepEqual(
      badPaths({
        ...minimal(),
        apo: { strategies: ['textual_gradient'], optimizer: { baseUrl: 'not a url', model: 'm' } },
      }),
      ['apo.optimizer.baseUrl'],
    );
    assert.deepEqual(badPaths({ ...minimal(), apo: { beamWidth: 0, seed: { mode: 'swap', template: 'x' } } }), [
      'apo.beamWidth',
      'apo.seed.mode',
    ]);
  });

  void it('lineage fields: a task source or a file, a deploy alias only with a lineage, startFrom one of three kinds', () => {
    const source = { ...minimal(), tasks: { trainPrefix: 'task-sources/calc/', evalFile: 'eval.jsonl' } };
    const c = parseRunConfig({ ...source, lineage: 'calc', deploy: { alias: 'calc-prod' } });
    assert.equal(c.tasks.replayShare, 0.25);
    assert.equal(c.model.startFrom, undefined);
    assert.deepEqual(parseRunConfig({ ...minimal(), model: { startFrom: { run: 'calc-night-1' } } }).model.startFrom, {
      run: 'calc-night-1',
    });
    assert.deepEqual(badPaths({ ...minimal(), tasks: { evalFile: 'eval.jsonl' } }), ['tasks.trainFile']);
    assert.deepEqual(badPaths({ ...source, tasks: { ...source.tasks, trainFile: 'train.jsonl' } }), [
      'tasks.trainPrefix',
    ]);
    assert.deepEqual(badPaths({ ...source, tasks: { ...source.tasks, trainPrefix: 'a/../up/' } }), [
      'tasks.trainPrefix',
    ]);
    assert.deepEqual(badPaths({ ...source, tasks: { ...source.tasks, trainPrefix: 'no-slash' } }), [
      'tasks.trainPrefix',
    ]);
    assert.deepEqual(badPaths({ ...source, deploy: { alias: 'calc-prod' } }), ['deploy']);
    assert.deepEqual(badPaths({ ...source, lineage: '../x' }), ['lineage']);
    assert.deepEqual(badPaths({ ...minimal(), model: { startFrom: { checkpoint: 'abc' } } }), [
      'model.startFrom.checkpoint',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), model: { startFrom: { run: 'a', lineage: 'b' } } }), ['model.startFrom']);
  });

  void it('eval.extraSets: named held-out sets by file or pinned hash; names unique; off by default', () => {
    assert.deepEqual(parseRunConfig(minimal()).eval.extraSets, []);
    const sets = [
      { name: 'b', file: 'b.jsonl', tasks: 10 },
      { name: 'c', set: 'c'.repeat(64) },
    ];
    assert.deepEqual(parseRunConfig({ ...minimal(), eval: { extraSets: sets } }).eval.extraSets, sets);
    assert.deepEqual(badPaths({ ...minimal(), eval: { extraSets: [{ name: 'b' }] } }), ['eval.extraSets.0.file']);
    assert.deepEqual(badPaths({ ...minimal(), eval: { extraSets: [{ name: 'b/../x', file: 'b.jsonl' }] } }), [
      'eval.extraSets.0.name',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), eval: { extraSets: [{ name: 'b', file: 'b.jsonl', tasks: 0 }] } }), [
      'eval.extraSets.0.tasks',
    ]);
    assert.deepEqual(
      badPaths({
        ...minimal(),
        eval: {
          extraSets: [
            { name: 'b', file: 'x.jsonl' },
            { name: 'b', file: 'y.jsonl' },
          ],
        },
      }),
      ['eval.extraSets'],
    );
  });

  void it('rollouts.dynamicSampling: off unless given; maxExtraRounds 1-20 is required, minInformativeGroups optional', () => {
    assert.equal(parseRunConfig(minimal()).rollouts.dynamicSampling, undefined);
    assert.deepEqual(
      parseRunConfig({ ...minimal(), rollouts: { dynamicSampling: { maxExtraRounds: 2 } } }).rollouts.dynamicSampling,
      { maxExtraRounds: 2 },
    );
    assert.deepEqual(badPaths({ ...minimal(), rollouts: { dynamicSampling: {} } }), [
      'rollouts.dynamicSampling.maxExtraRounds',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), rollouts: { dynamicSampling: { maxExtraRounds: 21 } } }), [
      'rollouts.dynamicSampling.maxExtraRounds',
    ]);
    assert.deepEqual(
      badPaths({ ...minimal(), rollouts: { dynamicSampling: { maxExtraRounds: 1, minInformativeGroups: 0 } } }),
      ['rollouts.dynamicSampling.minInformativeGroups'],
    );
  });

  void it('teacher: an OpenAI-style /v1 base URL, a model, a VOLT_TEACHER_ key variable, and warm-start iterations to serve', () => {
    const teacher = { baseUrl: 'https://api.example.com/v1', model: 'big-model' };
    const c = parseRunConfig({ ...minimal(), teacher, batch: { warmStartIterations: 2 } });
    assert.deepEqual(c.teacher, { ...teacher, apiKeyEnv: 'VOLT_TEACHER_API_KEY' });
    assert.equal(parseRunConfig(minimal()).teacher, undefined);
    assert.deepEqual(badPaths({ ...minimal(), teacher }), ['batch.warmStartIterations']);
    const warm = { batch: { warmStartIterations: 1 } };
    assert.deepEqual(badPaths({ ...minimal(), ...warm, teacher: { ...teacher, baseUrl: 'https://api.example.com' } }), [
      'teacher.baseUrl',
    ]);
    assert.deepEqual(badPaths({ ...minimal(), ...warm, teacher: { ...teacher, baseUrl: 'file:///v1' } }), [
      'teacher.baseUrl',
    ]);
    // Only a variable meant for it: a run config cannot send the model server's admin key to an endpoint it names.
    assert.deepEqual(
      badPaths({ ...minimal(), ...warm, teacher: { ...teacher, apiKeyEnv: 'VOLT_MODEL_SERVER_ADMIN_KEY' } }),
      ['teacher.apiKeyEnv'],
    );
    assert.deepEqual(badPaths({ ...minimal(), ...warm, teacher: { ...teacher, key: 'sk-x' } }), ['teacher']);
  });
});
