import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planChildren } from '../../src/apo/proposal.js';

const parents = [
  { version: 0, overlay: null },
  { version: 4, overlay: null },
];

describe('planning the children of a round', () => {
  it('gives each parent a block of versions, strategies alternating inside the block', () => {
    const plans = planChildren(parents, [7, 8, 9, 10], ['textual_gradient', 'bootstrap']);
    assert.deepEqual(
      plans.map((p) => [p.version, p.parentVersion, p.strategy, p.childIndex, p.siblingIndex]),
      [
        [7, 0, 'textual_gradient', 0, 0],
        [8, 0, 'bootstrap', 1, 1],
        [9, 4, 'textual_gradient', 2, 0],
        [10, 4, 'bootstrap', 3, 1],
      ],
    );
  });

  it('hands a remainder to the first parents and plans nothing without parents', () => {
    assert.deepEqual(
      planChildren(parents, [1, 2, 3], ['bootstrap']).map((p) => p.parentVersion),
      [0, 0, 4],
    );
    assert.deepEqual(planChildren([], [1, 2], ['bootstrap']), []);
  });
});
