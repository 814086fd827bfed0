import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countsByKind, formatByKind } from '../../src/rewards/by-kind.js';

describe('evaluation counts per task kind', () => {
  it("counts each kind's reward sum, scored and tasks; unscored rollouts count as tasks only", () => {
    const byKind = countsByKind([
      { taskKind: 'word', reward: 1 },
      { taskKind: 'plain', reward: 1 },
      { taskKind: 'word', reward: 0 },
      { taskKind: 'word', reward: null },
      { taskKind: 'plain', reward: 0.5 },
      { taskKind: null, reward: 1 },
    ]);
    assert.deepEqual(byKind, {
      '(none)': { rewardSum: 1, scored: 1, tasks: 1 },
      plain: { rewardSum: 1.5, scored: 2, tasks: 2 },
      word: { rewardSum: 1, scored: 2, tasks: 3 },
    });
    assert.deepEqual(Object.keys(byKind!), ['(none)', 'plain', 'word'], 'kinds in name order');
    assert.equal(formatByKind(byKind!), '(none) 1.000 (1/1), plain 0.750 (1.50/2), word 0.500 (1/2 scored of 3)');
  });

  it('is null when no task has a kind (task sets without them)', () => {
    assert.equal(
      countsByKind([
        { taskKind: null, reward: 1 },
        { taskKind: null, reward: 0 },
      ]),
      null,
    );
    assert.equal(countsByKind([]), null);
  });
});
