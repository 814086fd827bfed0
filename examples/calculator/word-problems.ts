import type { SeededRandom } from '../task-sets/seeded-random.js';

/** One generated problem: the question the agent sees and the number a reward compares with. */
export interface WordProblem {
  template: string;
  steps: number;
  question: string;
  answer: number;
}

const NAMES = [
  'Ana',
  'Ben',
  'Chen',
  'Dara',
  'Eli',
  'Fatima',
  'Gus',
  'Hana',
  'Ivan',
  'Jade',
  'Kofi',
  'Lena',
  'Mateo',
  'Nia',
];
const ITEMS = ['pens', 'apples', 'books', 'cookies', 'marbles', 'stickers', 'eggs', 'cards', 'shells', 'buttons'];
const CONTAINERS = ['boxes', 'bags', 'crates', 'packs', 'jars', 'baskets'];

type Template = (r: SeededRandom) => WordProblem;

// Plain one-operation questions, mostly written with symbols the model can copy into <calc>: the easy share
// that keeps SmolLM2-135M's base accuracy off zero (story problems alone measured ~3 %).
const plain = (
  r: SeededRandom,
  template: string,
  a: number,
  word: string,
  symbol: string,
  b: number,
  answer: number,
): WordProblem => ({
  template,
  steps: 1,
  answer,
  question: r.next() < 2 / 3 ? `What is ${a} ${symbol} ${b}?` : `What is ${a} ${word} ${b}?`,
});
const PLAIN: Record<string, Template> = {
  plainSum(r) {
    const [a, b] = [r.int(2, 60), r.int(2, 60)];
    return plain(r, 'plainSum', a, 'plus', '+', b, a + b);
  },
  plainDifference(r) {
    const a = r.int(10, 90);
    const b = r.int(1, a - 1);
    return plain(r, 'plainDifference', a, 'minus', '-', b, a - b);
  },
  plainProduct(r) {
    const [a, b] = [r.int(2, 15), r.int(2, 15)];
    return plain(r, 'plainProduct', a, 'times', '*', b, a * b);
  },
};

// Each template is a short story over 1-3 arithmetic steps; answers are whole, non-negative numbers.
const TEMPLATES: Record<string, Template> = {
  addMore(r) {
    const [name, have, more, item] = [r.pick(NAMES), r.int(2, 40), r.int(2, 40), r.pick(ITEMS)];
    return {
      template: 'addMore',
      steps: 1,
      question: `${name} has ${have} ${item} and gets ${more} more. How many ${item} does ${name} have now?`,
      answer: have + more,
    };
  },
  giveAway(r) {
    const [name, have, item] = [r.pick(NAMES), r.int(10, 60), r.pick(ITEMS)];
    const given = r.int(1, have - 1);
    return {
      template: 'giveAway',
      steps: 1,
      question: `${name} has ${have} ${item} and gives away ${given}. How many ${item} are left?`,
      answer: have - given,
    };
  },
  groups(r) {
    const [n, per, item, box] = [r.int(2, 12), r.int(2, 12), r.pick(ITEMS), r.pick(CONTAINERS)];
    return {
      template: 'groups',
      steps: 1,
      question: `There are ${n} ${box} with ${per} ${item} in each. How many ${item} are there in total?`,
      answer: n * per,
    };
  },
  sellAfterGroups(r) {
    const [n, per, item, box] = [r.int(3, 30), r.int(4, 25), r.pick(ITEMS), r.pick(CONTAINERS)];
    const sold = r.int(1, n * per - 1);
    return {
      template: 'sellAfterGroups',
      steps: 2,
      answer: n * per - sold,
      question: `A shop has ${n} ${box} of ${per} ${item} and sells ${sold} ${item}. How many ${item} are left?`,
    };
  },
  buyTwoThings(r) {
    const [name, count, price, extra] = [r.pick(NAMES), r.int(2, 12), r.int(2, 40), r.int(1, 30)];
    return {
      template: 'buyTwoThings',
      steps: 2,
      answer: count * price + extra,
      question: `${name} buys ${count} notebooks at ${price} dollars each and a bag for ${extra} dollars. How many dollars does ${name} spend?`,
    };
  },
  wageTwoDays(r) {
    const [name, rate, a, b] = [r.pick(NAMES), r.int(8, 30), r.int(2, 10), r.int(2, 10)];
    return {
      template: 'wageTwoDays',
      steps: 2,
      answer: rate * (a + b),
      question: `${name} earns ${rate} dollars per hour, works ${a} hours on Monday and ${b} hours on Tuesday. How many dollars does ${name} earn?`,
    };
  },
  shareEqually(r) {
    const [name, friends, each, kept, item] = [r.pick(NAMES), r.int(2, 9), r.int(3, 20), r.int(1, 15), r.pick(ITEMS)];
    return {
      template: 'shareEqually',
      steps: 2,
      answer: each,
      question: `${name} has ${friends * each + kept} ${item}, keeps ${kept} and shares the rest equally among ${friends} friends. How many ${item} does each friend get?`,
    };
  },
  packAndGive(r) {
    const [per, cartons, given, item] = [r.int(4, 12), r.int(6, 30), r.int(1, 5), r.pick(ITEMS)];
    return {
      template: 'packAndGive',
      steps: 2,
      answer: cartons - given,
      question: `A farmer packs ${per * cartons} ${item} into boxes of ${per} and gives away ${given} boxes. How many boxes does the farmer keep?`,
    };
  },
  rowsBrokenNew(r) {
    const [rows, per, broken, fresh] = [r.int(3, 12), r.int(3, 12), r.int(1, 6), r.int(1, 9)];
    return {
      template: 'rowsBrokenNew',
      steps: 3,
      answer: rows * per - broken + fresh,
      question: `A hall has ${rows} rows of ${per} chairs. ${broken} chairs break and ${fresh} new chairs arrive. How many usable chairs are there now?`,
    };
  },
  savingsAfterSpend(r) {
    const [name, weekly, weeks] = [r.pick(NAMES), r.int(5, 40), r.int(2, 12)];
    const spent = r.int(1, Math.min(60, weekly * weeks - 1));
    return {
      template: 'savingsAfterSpend',
      steps: 2,
      answer: weekly * weeks - spent,
      question: `${name} saves ${weekly} dollars every week for ${weeks} weeks, then spends ${spent} dollars. How many dollars are left?`,
    };
  },
};

export const TEMPLATE_NAMES = [...Object.keys(PLAIN), ...Object.keys(TEMPLATES)];

/** A problem from the given template, or else 60 % plain and 40 % story problems. */
export function makeWordProblem(r: SeededRandom, template?: string): WordProblem {
  const name = template ?? (r.next() < 0.6 ? r.pick(Object.keys(PLAIN)) : r.pick(Object.keys(TEMPLATES)));
  const make = PLAIN[name] ?? TEMPLATES[name];
  if (!make) throw new Error(`unknown template ${name}`);
  return make(r);
}
