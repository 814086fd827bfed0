import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { sampleTaskIds } from '../../src/workflows/sampling.js';
import { applyHyperParameters, validateHyperParameters } from '../../src/workflows/hyper-parameters.js';
import { parseRunConfig } from '../../src/config/run.js';

const ids = Array.from({ length: 50 }, (_, i) => `t${i}`);

describe('task sampling', () => {
  it('is a pure function of (seed, iteration): replays pick the same tasks', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e6 }),
        fc.nat(1000),
        fc.integer({ min: 1, max: 60 }),
        (seed, iteration, n) => {
          const a = sampleTaskIds(ids, n, seed, iteration);
          assert.deepEqual(a, sampleTaskIds(ids, n, seed, iteration));
          assert.equal(a.length, Math.min(n, ids.length));
          assert.equal(new Set(a).size, a.length, 'no task twice in one iteration');
          assert.ok(a.every((id) => ids.includes(id)));
        },
      ),
    );
  });

  it('differs between iterations', () => {
    assert.notDeepEqual(sampleTaskIds(ids, 8, 1, 0), sampleTaskIds(ids, 8, 1, 1));
  });
});

describe('hyper-parameter updates', () => {
  const config = parseRunConfig({
    runId: 'r',
    agent: { command: ['true'] },
    tasks: { trainFile: 'a', evalFile: 'b' },
    reward: { kind: 'numeric_match' },
  });

  it('rejects unknown or out-of-range fields, naming each', () => {
    assert.throws(
      () => validateHyperParameters(config, { lr: -1, nope: 3 } as never),
      /lr \(trainer\.lr\): expected a finite number > 0 and < 1, got -1; nope: not a tunable/,
    );
    assert.throws(
      () => validateHyperParameters(config, { groupSize: 1 }),
      /groupSize \(rollouts\.groupSize\): expected an integer >= 2 and <= 1024/,
    );
  });

  it('applies a valid patch to the right sections only', () => {
    validateHyperParameters(config, { lr: 1e-4, groupSize: 8, promoteMargin: 0.05 });
    const next = applyHyperParameters(config, { lr: 1e-4, groupSize: 8, promoteMargin: 0.05 });
    assert.equal(next.trainer.lr, 1e-4);
    assert.equal(next.rollouts.groupSize, 8);
    assert.equal(next.eval.promoteMargin, 0.05);
    assert.equal(next.trainer.clipLow, config.trainer.clipLow);
  });
});
