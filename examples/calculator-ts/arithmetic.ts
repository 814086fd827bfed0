/** Evaluates + - * / ( ) over decimal numbers with a recursive-descent parser: model text is never eval'd. */
export class ArithmeticError extends Error {}

const MAX_LENGTH = 200;

export function evaluate(expression: string): number {
  if (expression.length > MAX_LENGTH) throw new ArithmeticError(`expression longer than ${MAX_LENGTH} characters`);
  // Models write "12 x 7", "12×7", "1,200" or "$5": normalise those before parsing.
  const source = expression
    .replace(/[×x]/g, '*')
    .replace(/÷/g, '/')
    .replace(/[,$\s]/g, '');
  let pos = 0;

  const peek = (): string | undefined => source[pos];
  const fail = (what: string): never => {
    throw new ArithmeticError(`${what} at position ${pos} in "${expression}"`);
  };

  function parseSum(): number {
    let value = parseProduct();
    while (peek() === '+' || peek() === '-') {
      const op = source[pos++];
      const right = parseProduct();
      value = op === '+' ? value + right : value - right;
    }
    return value;
  }

  function parseProduct(): number {
    let value = parseUnary();
    while (peek() === '*' || peek() === '/') {
      const op = source[pos++];
      const right = parseUnary();
      if (op === '/' && right === 0) fail('division by zero');
      value = op === '*' ? value * right : value / right;
    }
    return value;
  }

  function parseUnary(): number {
    if (peek() === '-') {
      pos++;
      return -parseUnary();
    }
    if (peek() === '+') {
      pos++;
      return parseUnary();
    }
    return parseAtom();
  }

  function parseAtom(): number {
    if (peek() === '(') {
      pos++;
      const value = parseSum();
      if (peek() !== ')') fail('expected ")"');
      pos++;
      return value;
    }
    const match = /^\d+(\.\d+)?|^\.\d+/.exec(source.slice(pos));
    if (!match) return fail(peek() === undefined ? 'unexpected end' : `unexpected "${peek()}"`);
    pos += match[0].length;
    return Number(match[0]);
  }

  if (source === '') fail('empty expression');
  const value = parseSum();
  if (pos < source.length) fail(`unexpected "${peek()}"`);
  if (!Number.isFinite(value)) fail('result is not finite');
  return value;
}

/** Formats a result the way a person writes it: integers plain, others to at most 6 decimals. */
export function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(6)));
}
