import type { SeededRandom } from '../task-sets/seeded-random.js';
import type { WordProblem } from './word-problems.js';

/**
 * Held-out word problems "set B", written apart from word-problems.ts with other situations and wording (ages,
 * distances, recipes, change, tickets, multi-clause stories): never used for training or tuning, only to see whether
 * a gain on the main eval set carries over. 1-3 steps, whole non-negative answers.
 */

const PEOPLE = ['Maria', 'Omar', 'Priya', 'Tomasz', 'Yuki', 'Sofia', 'Kwame', 'Ines', 'Ravi', 'Greta', 'Luis', 'Amara'];
const FOODS = ['muffins', 'pancakes', 'rolls', 'tarts', 'dumplings'];
const VEHICLES = ['a cyclist', 'a bus', 'a truck', 'a ferry', 'a runner'];

type Template = (r: SeededRandom) => WordProblem;

const TEMPLATES_B: Record<string, Template> = {
  ageTimesLater(r) {
    const [who, age, times, later] = [r.pick(PEOPLE), r.int(3, 12), r.int(2, 5), r.int(2, 9)];
    return {
      template: 'ageTimesLater',
      steps: 2,
      answer: age * times + later,
      question: `${who} is ${age} years old, and ${who}'s aunt is ${times} times as old. How old will the aunt be in ${later} years?`,
    };
  },
  ageBackAndForth(r) {
    const [who, future, ahead] = [r.pick(PEOPLE), r.int(15, 60), r.int(2, 9)];
    const ago = r.int(1, future - ahead - 1);
    return {
      template: 'ageBackAndForth',
      steps: 2,
      answer: future - ahead - ago,
      question: `In ${ahead} years ${who} will be ${future}. How old was ${who} ${ago} years ago?`,
    };
  },
  speedTime(r) {
    const [v, speed, hours] = [r.pick(VEHICLES), r.int(4, 60), r.int(2, 8)];
    return {
      template: 'speedTime',
      steps: 1,
      answer: speed * hours,
      question: `Moving at ${speed} kilometres per hour, ${v} keeps going for ${hours} hours. What distance in kilometres does it cover?`,
    };
  },
  tripTwoLegs(r) {
    const [speed, hours, extra] = [r.int(20, 90), r.int(2, 6), r.int(5, 80)];
    return {
      template: 'tripTwoLegs',
      steps: 2,
      answer: speed * hours + extra,
      question: `A train goes ${speed} km every hour. After ${hours} hours it stops at a station, then travels another ${extra} km. How many km has it travelled altogether?`,
    };
  },
  roadStillAhead(r) {
    const [who, first, second] = [r.pick(PEOPLE), r.int(10, 60), r.int(10, 60)];
    const total = first + second + r.int(5, 90);
    return {
      template: 'roadStillAhead',
      steps: 2,
      answer: total - first - second,
      question: `The road to the lake is ${total} km long. ${who} drives ${first} km, takes a break, then drives ${second} km more. How many km are still ahead?`,
    };
  },
  recipeScale(r) {
    const [food, batch, cups, times] = [r.pick(FOODS), r.pick([6, 8, 10, 12]), r.int(2, 6), r.int(2, 6)];
    return {
      template: 'recipeScale',
      steps: 2,
      answer: cups * times,
      question: `A recipe uses ${cups} cups of flour for every ${batch} ${food}. How many cups of flour are needed to bake ${batch * times} ${food}?`,
    };
  },
  changeFromBill(r) {
    const [who, count, price] = [r.pick(PEOPLE), r.int(2, 6), r.int(2, 9)];
    const bill = [20, 50, 100].find((b) => b > count * price)!;
    return {
      template: 'changeFromBill',
      steps: 2,
      answer: bill - count * price,
      question: `${who} buys ${count} sandwiches that cost ${price} dollars each and pays with a ${bill}-dollar bill. How much change, in dollars, does ${who} get back?`,
    };
  },
  ticketsMixed(r) {
    const [adult, child, adults, children] = [r.int(8, 20), r.int(2, 7), r.int(1, 4), r.int(1, 5)];
    return {
      template: 'ticketsMixed',
      steps: 3,
      answer: adult * adults + child * children,
      question: `At the zoo an adult ticket is ${adult} dollars and a child ticket is ${child} dollars. What do ${adults} adults and ${children} children pay together?`,
    };
  },
  bakerTwiceSold(r) {
    const morning = r.int(10, 40);
    const sold = r.int(1, morning * 3 - 1);
    return {
      template: 'bakerTwiceSold',
      steps: 3,
      answer: morning * 3 - sold,
      question: `Before lunch a baker made ${morning} rolls; after lunch he made twice as many as before lunch; by evening he had sold ${sold} rolls. How many rolls does he still have?`,
    };
  },
  pagesPerDay(r) {
    const [who, perDay, days] = [r.pick(PEOPLE), r.int(5, 30), r.int(3, 15)];
    return {
      template: 'pagesPerDay',
      steps: 1,
      answer: days,
      question: `A novel has ${perDay * days} pages. If ${who} reads ${perDay} pages a day, in how many days will ${who} finish it?`,
    };
  },
  temperatureSwing(r) {
    const [start, rise] = [r.int(0, 15), r.int(2, 15)];
    const fall = r.int(1, start + rise);
    return {
      template: 'temperatureSwing',
      steps: 2,
      answer: start + rise - fall,
      question: `At dawn the thermometer showed ${start} degrees. By noon it had risen ${rise} degrees, and by night it had dropped ${fall} degrees from noon. What did it show at night?`,
    };
  },
};

export const TEMPLATE_B_NAMES = Object.keys(TEMPLATES_B);

/** A set-B problem from the given template, or from one picked uniformly. */
export function makeWordProblemB(r: SeededRandom, template?: string): WordProblem {
  const make = TEMPLATES_B[template ?? r.pick(TEMPLATE_B_NAMES)];
  if (!make) throw new Error(`unknown set-B template ${template}`);
  return make(r);
}
