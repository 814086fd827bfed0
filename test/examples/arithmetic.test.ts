import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { ArithmeticError, evaluate, formatNumber } from '../../examples/calculator-ts/arithmetic.js';

type Expr = { n: number } | { op: '+' | '-' | '*'; left: Expr; right: Expr };

const exprArb: fc.Arbitrary<Expr> = fc.letrec<{ expr: Expr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ n: fc.integer({ min: 0, max: 999 }) }),
    fc.record({ op: fc.constantFrom('+' as const, '-' as const, '*' as const), left: tie('expr'), right: tie('expr') }),
  ),
})).expr;

const render = (e: Expr): string => ('n' in e ? String(e.n) : `(${render(e.left)} ${e.op} ${render(e.right)})`);
const value = (e: Expr): number => {
  if ('n' in e) return e.n;
  const [l, r] = [value(e.left), value(e.right)];
  return e.op === '+' ? l + r : e.op === '-' ? l - r : l * r;
};

void it('evaluates any fully parenthesised integer expression exactly', () => {
  fc.assert(
    fc.property(exprArb, (e) => {
      const source = render(e);
      if (source.length > 200 || !Number.isSafeInteger(value(e))) return;
      assert.equal(evaluate(source), value(e));
    }),
  );
});

void it('follows precedence, unary minus and the notations models write', () => {
  assert.equal(evaluate('2+3*4'), 14);
  assert.equal(evaluate('(2+3)*4 - 6/4'), 18.5);
  assert.equal(evaluate('-3--2'), -1);
  assert.equal(evaluate('12 x 7'), 84);
  assert.equal(evaluate('12×7÷2'), 42);
  assert.equal(evaluate('$1,200 / 4'), 300);
  assert.equal(formatNumber(10 / 3), '3.333333');
  assert.equal(formatNumber(231), '231');
});

void it('rejects what is not arithmetic with an ArithmeticError, never running it', () => {
  for (const bad of ['', '5/0', '2**3', '(1+2', '1+2)', 'process.exit(1)', 'a+1', '1e400*1e400', '9'.repeat(201)]) {
    assert.throws(() => evaluate(bad), ArithmeticError, bad);
  }
});
