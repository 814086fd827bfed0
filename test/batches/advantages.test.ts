import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { groupAdvantages, populationStd, type Estimator } from '../../src/batches/advantages.js';

const rewardsArb = fc.array(fc.double({ min: -100, max: 100, noNaN: true }), { minLength: 2, maxLength: 16 });
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const close = (a: number, b: number, tol = 1e-6) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));

void describe('group advantages', () => {
  void it('hand-computed values for each estimator', () => {
    const r = [1, 0, 0, 1];
    assert.deepEqual(groupAdvantages(r, 'dr_grpo', 1e-6), [0.5, -0.5, -0.5, 0.5]);
    // mean 0.5, population std 0.5
    assert.ok(groupAdvantages(r, 'grpo', 0).every((a, i) => close(a, [1, -1, -1, 1][i]!)));
    // rloo: r_i - mean(others) = 1 - 1/3
    assert.ok(groupAdvantages(r, 'rloo', 0).every((a, i) => close(a, [2 / 3, -2 / 3, -2 / 3, 2 / 3][i]!)));
  });

  for (const estimator of ['grpo', 'dr_grpo', 'rloo'] as Estimator[]) {
    void it(`${estimator}: advantages sum to zero within a group`, () => {
      fc.assert(
        fc.property(rewardsArb, (r) => {
          const a = groupAdvantages(r, estimator, 1e-6);
          const scale = estimator === 'grpo' ? 1 : Math.max(1, ...r.map(Math.abs));
          return Math.abs(sum(a)) <= 1e-7 * r.length * scale;
        }),
      );
    });

    void it(`${estimator}: invariant to shifting every reward by a constant`, () => {
      fc.assert(
        fc.property(rewardsArb, fc.double({ min: -50, max: 50, noNaN: true }), (r, shift) => {
          const a = groupAdvantages(r, estimator, 1e-6);
          const b = groupAdvantages(
            r.map((x) => x + shift),
            estimator,
            1e-6,
          );
          // Shifting can make a near-constant group exactly constant in floats (or the reverse); skip those.
          if (populationStd(r) < 1e-6) return true;
          return a.every((x, i) => Math.abs(x - b[i]!) <= 1e-6 * Math.max(1, Math.abs(x)));
        }),
      );
    });

    void it(`${estimator}: zero for a constant-reward group`, () => {
      fc.assert(
        fc.property(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: 1, max: 32 }), (v, n) =>
          groupAdvantages(new Array<number>(n).fill(v), estimator, 1e-6).every((a) => a === 0),
        ),
      );
    });
  }

  void it('grpo normalises to unit population std', () => {
    fc.assert(
      fc.property(rewardsArb, (r) => {
        if (populationStd(r) < 1e-3) return true;
        return close(populationStd(groupAdvantages(r, 'grpo', 0)), 1, 1e-9);
      }),
    );
  });
});
