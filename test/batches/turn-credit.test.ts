import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { groupAdvantages, type Estimator } from '../../src/batches/advantages.js';
import { perTurnAdvantages, turnReturns } from '../../src/batches/turn-credit.js';

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const close = (a: number, b: number, tol = 1e-6) => Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));
const reward = fc.double({ min: -10, max: 10, noNaN: true });
/** Whether the returns of turn index t are (nearly) all equal across the rollouts that reach it. */
const nearConstant = (returns: number[][], t: number) => {
  const at = returns.flatMap((g) => (t < g.length ? [g[t]!] : []));
  return Math.max(...at) - Math.min(...at) < 1e-6;
};
/** A group of 2-8 rollouts, each with 1-5 turns: per turn its return. */
const groupArb = fc.array(fc.array(reward, { minLength: 1, maxLength: 5 }), { minLength: 2, maxLength: 8 });

void describe('credit per turn: returns', () => {
  void it('hand-computed: turn rewards where they were posted, the outcome on the last turn, discounted', () => {
    // Trained turns at seqs 0, 2, 5; rewards posted for seq 1 (a frozen role's call: goes to turn 0), 2 and 9 (after
    // the last turn: goes to it); outcome 1.
    const posted = [
      { span: 1, value: 0.5 },
      { span: 2, value: -1 },
      { span: 9, value: 2 },
    ];
    assert.deepEqual(turnReturns([0, 2, 5], 1, posted, 1), [2.5, 2, 3]);
    // γ = 0.5: G2 = 3, G1 = -1 + 1.5 = 0.5, G0 = 0.5 + 0.25
    assert.deepEqual(turnReturns([0, 2, 5], 1, posted, 0.5), [0.75, 0.5, 3]);
    // A reward posted before the first trained turn is the first turn's.
    assert.deepEqual(turnReturns([3, 4], 0, [{ span: 0, value: 1 }], 1), [1, 0]);
    assert.deepEqual(turnReturns([], 1, [], 1), []);
  });

  void it('with γ = 1 the first turn gets the whole return broadcast would give', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 6 }),
        reward,
        fc.array(fc.record({ span: fc.integer({ min: 0, max: 50 }), value: reward }), { maxLength: 6 }),
        (seqs, r, posted) => {
          const sorted = [...seqs].sort((a, b) => a - b);
          const g = turnReturns(sorted, r, posted, 1);
          return close(g[0]!, r + sum(posted.map((p) => p.value)), 1e-9);
        },
      ),
    );
  });
});

void describe('credit per turn: group baselines over matching turns', () => {
  for (const estimator of ['grpo', 'dr_grpo', 'rloo'] as Estimator[]) {
    void it(`${estimator}: advantages of each turn index sum to zero over the rollouts that reach it`, () => {
      fc.assert(
        fc.property(groupArb, (returns) => {
          const adv = perTurnAdvantages(returns, estimator, 1e-6, 2);
          const longest = Math.max(...returns.map((g) => g.length));
          for (let t = 0; t < longest; t++) {
            const at = adv.flatMap((a) => (t < a.length ? [a[t]!] : []));
            const scale = estimator === 'grpo' ? 1 : 10;
            if (Math.abs(sum(at)) > 1e-7 * at.length * scale) return false;
          }
          return adv.every((a, i) => a.length === returns[i]!.length);
        }),
      );
    });

    void it(`${estimator}: invariant to shifting every return of a turn index by a constant`, () => {
      fc.assert(
        fc.property(groupArb, fc.double({ min: -5, max: 5, noNaN: true }), (returns, shift) => {
          const a = perTurnAdvantages(returns, estimator, 1e-6, 2);
          const b = perTurnAdvantages(
            returns.map((g) => g.map((x) => x + shift)),
            estimator,
            1e-6,
            2,
          );
          // Shifting can make a near-constant turn exactly constant in floats (or the reverse); skip those turns.
          return a.every((row, i) => row.every((x, t) => nearConstant(returns, t) || close(x, b[i]![t]!, 1e-4)));
        }),
      );
    });
  }

  void it('one-turn rollouts get exactly the broadcast advantages', () => {
    fc.assert(
      fc.property(fc.array(reward, { minLength: 2, maxLength: 8 }), (rewards) => {
        const perTurn = perTurnAdvantages(
          rewards.map((r) => turnReturns([0], r, [], 0.9)),
          'grpo',
          1e-6,
          2,
        );
        const broadcast = groupAdvantages(rewards, 'grpo', 1e-6);
        return perTurn.every((a, i) => a.length === 1 && close(a[0]!, broadcast[i]!, 1e-12));
      }),
    );
  });

  void it('a turn index fewer than minGroupSize rollouts reach gets advantage 0', () => {
    const adv = perTurnAdvantages([[1, 5, 7], [0, 2], [0]], 'dr_grpo', 1e-6, 2);
    // turn 0: mean 1/3; turn 1: mean 3.5; turn 2: only one rollout
    assert.ok(close(adv[0]![0]!, 2 / 3) && close(adv[1]![0]!, -1 / 3) && close(adv[2]![0]!, -1 / 3));
    assert.deepEqual([adv[0]![1], adv[1]![1], adv[0]![2]], [1.5, -1.5, 0]);
  });
});
