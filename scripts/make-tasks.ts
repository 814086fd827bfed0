/**
 * Writes the example task sets reproducibly from one seed: calculator word problems and SQL shop tasks,
 * train and eval disjoint; the calculator's word-heavy training mix and its second held-out word-problem set
 * (eval-word-b.jsonl, other templates: examples/calculator/word-problems-b.ts) and the SQL tasks' set b (eval-b.jsonl,
 * other wording). `--check` regenerates in memory and fails if the committed files differ.
 *
 *   node --import tsx scripts/make-tasks.ts [--seed 20261130] [--check]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeWordProblem } from '../examples/calculator/word-problems.js';
import { makeWordProblemB } from '../examples/calculator/word-problems-b.js';
import { SHOP_TASK_KINDS, makeShop, makeShopTask, shopSeedSql } from '../examples/sql-agent/shop-tasks.js';
import { SeededRandom } from '../examples/task-sets/seeded-random.js';

const root = path.resolve(import.meta.dirname, '..');
const SIZES = {
  calculator: { train: 200, eval: 50, evalWordB: 30, plainInWordHeavy: 26, plainInWordHeavyEval: 6 },
  sql: { train: 96, eval: 48, evalB: 48 },
};

/** Draws `count` items with distinct keys, bounded so a too-small space fails instead of looping. */
function drawUnique<T>(count: number, draw: () => T, key: (item: T) => string): T[] {
  const seen = new Map<string, T>();
  for (let attempt = 0; seen.size < count && attempt < count * 50; attempt++) {
    const item = draw();
    if (!seen.has(key(item))) seen.set(key(item), item);
  }
  if (seen.size < count) throw new Error(`only ${seen.size} distinct items of ${count} wanted`);
  return [...seen.values()];
}

/** Splits into eval (first) and train, asserting that no key appears in both. */
function split<T>(items: T[], sizes: { train: number; eval: number }, key: (item: T) => string) {
  const evalSet = items.slice(0, sizes.eval);
  const train = items.slice(sizes.eval, sizes.eval + sizes.train);
  const evalKeys = new Set(evalSet.map(key));
  const leaked = train.filter((t) => evalKeys.has(key(t)));
  if (leaked.length > 0) throw new Error(`train and eval overlap: ${leaked.map(key).join(', ')}`);
  return { train, eval: evalSet };
}

const jsonl = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).join('\n') + '\n';

export function makeTaskFiles(seed: number): Record<string, string> {
  const files: Record<string, string> = {};
  const calcRandom = new SeededRandom(seed);
  const problems = drawUnique(
    SIZES.calculator.train + SIZES.calculator.eval,
    () => makeWordProblem(calcRandom),
    (p) => p.question,
  );
  for (const [mode, set] of Object.entries(split(problems, SIZES.calculator, (p) => p.question))) {
    files[`examples/calculator/tasks/${mode}.jsonl`] = jsonl(
      set.map((p, i) => ({
        id: `calc-${mode}-${String(i + 1).padStart(4, '0')}`,
        input: { question: p.question },
        reference: { answer: p.answer, template: p.template, steps: p.steps },
        // Evaluations are reported per kind: the word problems are the task, plain arithmetic the easy share.
        kind: p.template.startsWith('plain') ? 'plain' : 'word',
      })),
    );
  }
  // The same tasks weighted to word problems (every word problem, the first plain ones as a curriculum / a check):
  // the word-problem demo trains on the first and evaluates the second every iteration, cheaper than the full eval set.
  for (const [mode, plainCount] of [
    ['train', SIZES.calculator.plainInWordHeavy],
    ['eval', SIZES.calculator.plainInWordHeavyEval],
  ] as const) {
    const tasks = files[`examples/calculator/tasks/${mode}.jsonl`]!.trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { kind: string });
    const plainKept = tasks.filter((t) => t.kind === 'plain').slice(0, plainCount);
    files[`examples/calculator/tasks/${mode}-word-heavy.jsonl`] = jsonl(
      tasks.filter((t) => t.kind === 'word' || plainKept.includes(t)),
    );
  }
  // Set B: other templates and wording, its own seed; held out, never trained or tuned on.
  const bRandom = new SeededRandom(seed + 2);
  const setB = drawUnique(
    SIZES.calculator.evalWordB,
    () => makeWordProblemB(bRandom),
    (p) => p.question,
  );
  files['examples/calculator/tasks/eval-word-b.jsonl'] = jsonl(
    setB.map((p, i) => ({
      id: `calc-evalb-${String(i + 1).padStart(4, '0')}`,
      input: { question: p.question },
      reference: { answer: p.answer, template: p.template, steps: p.steps },
      kind: 'word',
    })),
  );

  const sqlRandom = new SeededRandom(seed + 1);
  const shop = makeShop(sqlRandom);
  files['examples/sql-agent/shop.sql'] = shopSeedSql(shop);
  const shopTasks = drawUnique(
    SIZES.sql.train + SIZES.sql.eval,
    () => makeShopTask(sqlRandom, shop),
    (t) => t.instruction,
  );
  // Held-out set b: its own random stream, the same kinds of change in other words (shop-tasks.ts `Wording`).
  const sqlRandomB = new SeededRandom(seed + 2);
  const shopTasksB = drawUnique(
    SIZES.sql.evalB,
    () => makeShopTask(sqlRandomB, shop, sqlRandomB.pick(SHOP_TASK_KINDS), 'b'),
    (t) => t.instruction,
  );
  const shopSets = { ...split(shopTasks, SIZES.sql, (t) => t.instruction), 'eval-b': shopTasksB };
  for (const [mode, set] of Object.entries(shopSets)) {
    files[`examples/sql-agent/tasks/${mode}.jsonl`] = jsonl(
      set.map((t, i) => ({
        id: `sql-${mode}-${String(i + 1).padStart(4, '0')}`,
        input: { database: 'shop.db', instruction: t.instruction },
        reference: { expectedRows: t.expectedRows, solutionSql: t.solutionSql, kind: t.kind },
        kind: t.kind,
        // Run in the fresh workdir before the agent starts; argv paths are relative to the repo root.
        setup: { command: ['python3', 'examples/sql-agent/seed_db.py', 'shop.db'] },
      })),
    );
  }
  return files;
}

function main(): void {
  const { values } = parseArgs({
    options: { seed: { type: 'string', default: '20261130' }, check: { type: 'boolean', default: false } },
  });
  const seed = Number(values.seed);
  if (!Number.isSafeInteger(seed)) throw new Error(`--seed must be an integer, got ${values.seed}`);
  const files = makeTaskFiles(seed);
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(root, file);
    if (values.check) {
      let current = '';
      try {
        current = readFileSync(target, 'utf8');
      } catch {
        current = '';
      }
      if (current !== text)
        throw new Error(`${file} differs from what seed ${seed} generates; rerun scripts/make-tasks.ts`);
    } else {
      mkdirSync(path.dirname(target), { recursive: true });
      writeFileSync(target, text);
    }
    console.log(`${values.check ? 'ok     ' : 'wrote  '} ${file} (${text.trimEnd().split('\n').length} lines)`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) main();
