import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { it } from 'node:test';
import { SHOP_QUERIES } from '../../examples/sql-agent/shop-tasks.js';
import { TEMPLATE_NAMES } from '../../examples/calculator/word-problems.js';
import { makeTaskFiles } from '../../scripts/make-tasks.js';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const tasksOf = (file: string) =>
  read(file)
    .trimEnd()
    .split('\n')
    .map(
      (line) =>
        JSON.parse(line) as {
          id: string;
          input: Record<string, string>;
          reference: Record<string, unknown>;
          kind?: string;
          setup?: { command: string[] };
        },
    );

void it('the committed task sets are exactly what the default seed generates', () => {
  const files = makeTaskFiles(20261130);
  assert.deepEqual(Object.keys(files).sort(), [
    'examples/calculator/tasks/eval-word-b.jsonl',
    'examples/calculator/tasks/eval-word-heavy.jsonl',
    'examples/calculator/tasks/eval.jsonl',
    'examples/calculator/tasks/train-word-heavy.jsonl',
    'examples/calculator/tasks/train.jsonl',
    'examples/sql-agent/shop.sql',
    'examples/sql-agent/tasks/eval-b.jsonl',
    'examples/sql-agent/tasks/eval.jsonl',
    'examples/sql-agent/tasks/train.jsonl',
  ]);
  for (const [file, text] of Object.entries(files))
    assert.equal(read(file), text, `${file} is stale: run scripts/make-tasks.ts`);
  assert.notEqual(
    makeTaskFiles(7)['examples/calculator/tasks/eval.jsonl'],
    files['examples/calculator/tasks/eval.jsonl'],
  );
});

void it('calculator train and eval are disjoint, with unique ids and whole non-negative answers', () => {
  const train = tasksOf('examples/calculator/tasks/train.jsonl');
  const evalSet = tasksOf('examples/calculator/tasks/eval.jsonl');
  assert.equal(train.length, 200);
  assert.equal(evalSet.length, 50);
  const evalQuestions = new Set(evalSet.map((t) => t.input.question));
  assert.deepEqual(
    train.filter((t) => evalQuestions.has(t.input.question)),
    [],
  );
  assert.equal(new Set([...train, ...evalSet].map((t) => t.id)).size, 250);
  for (const task of [...train, ...evalSet]) {
    assert.ok(Number.isInteger(task.reference.answer) && (task.reference.answer as number) >= 0, task.id);
    assert.deepEqual(Object.keys(task.input), ['question']);
  }
});

void it('set B: 30 held-out word problems from other templates, sharing no question with train or eval; the word-heavy files are subsets', () => {
  const train = tasksOf('examples/calculator/tasks/train.jsonl');
  const evalSet = tasksOf('examples/calculator/tasks/eval.jsonl');
  const setB = tasksOf('examples/calculator/tasks/eval-word-b.jsonl') as (ReturnType<typeof tasksOf>[number] & {
    kind: string;
  })[];
  assert.equal(setB.length, 30);
  assert.equal(new Set(setB.map((t) => t.input.question)).size, 30);
  const mainQuestions = new Set([...train, ...evalSet].map((t) => t.input.question));
  assert.deepEqual(
    setB.filter((t) => mainQuestions.has(t.input.question)),
    [],
  );
  const bTemplates = new Set(setB.map((t) => t.reference.template as string));
  assert.deepEqual(
    [...bTemplates].filter((name) => TEMPLATE_NAMES.includes(name)),
    [],
    "set B uses none of the main generator's templates",
  );
  assert.ok(bTemplates.size >= 8, `set B covers ${bTemplates.size} templates`);
  for (const t of setB) {
    assert.equal(t.kind, 'word');
    assert.ok(Number.isInteger(t.reference.answer) && (t.reference.answer as number) >= 0, t.id);
    assert.ok([1, 2, 3].includes(t.reference.steps as number), t.id);
  }
  for (const mode of ['train', 'eval'] as const) {
    const all = read(`examples/calculator/tasks/${mode}.jsonl`).trimEnd().split('\n');
    const heavy = read(`examples/calculator/tasks/${mode}-word-heavy.jsonl`).trimEnd().split('\n');
    assert.deepEqual(
      heavy,
      all.filter((line) => heavy.includes(line)),
      `${mode}-word-heavy.jsonl keeps ${mode}.jsonl's lines and order`,
    );
    const words = all.filter((line) => (JSON.parse(line) as { kind: string }).kind === 'word');
    assert.deepEqual(
      heavy.filter((line) => (JSON.parse(line) as { kind: string }).kind === 'word'),
      words,
      'every word problem',
    );
    assert.equal(heavy.length - words.length, mode === 'train' ? 26 : 6);
  }
});

void it("every SQL task's solution turns the seeded database into its expected rows, and is a real change", () => {
  const train = tasksOf('examples/sql-agent/tasks/train.jsonl');
  const evalSet = tasksOf('examples/sql-agent/tasks/eval.jsonl');
  const evalInstructions = new Set(evalSet.map((t) => t.input.instruction));
  assert.deepEqual(
    train.filter((t) => evalInstructions.has(t.input.instruction)),
    [],
  );
  // One Python process checks all tasks on in-memory copies of the seed (stdlib sqlite3).
  const script = `
import json, sqlite3, sys
req = json.load(sys.stdin)
out = []
for sql in [None] + req["solutions"]:
    con = sqlite3.connect(":memory:")
    con.executescript(req["seed"])
    if sql: con.execute(sql)
    out.append({name: [list(r) for r in con.execute(q).fetchall()] for name, q in req["queries"].items()})
json.dump(out, sys.stdout)`;
  // Set b asks for the same kinds of change in words neither train nor eval uses.
  const setB = tasksOf('examples/sql-agent/tasks/eval-b.jsonl');
  const wordsOf = (t: { input: Record<string, string> }) =>
    (t.input.instruction ?? '')
      .replace(/[0-9]+/g, '#')
      .replace(/[a-z0-9.]+@[a-z.]+/g, '@')
      .split(/[\s:;,.]+/);
  const trainWords = new Set(train.flatMap(wordsOf));
  for (const t of setB)
    assert.ok(
      wordsOf(t).some((w) => !trainWords.has(w)),
      `${t.id}: worded as in train`,
    );
  assert.deepEqual([...new Set(setB.map((t) => t.kind))].sort(), [...new Set(train.map((t) => t.kind))].sort());
  const tasks = [...train, ...evalSet, ...setB];
  const [seedState, ...states] = JSON.parse(
    execFileSync(path.join(root, '.venv/bin/python'), ['-c', script], {
      input: JSON.stringify({
        seed: read('examples/sql-agent/shop.sql'),
        queries: SHOP_QUERIES,
        solutions: tasks.map((t) => t.reference.solutionSql),
      }),
      encoding: 'utf8',
    }),
  ) as unknown[];
  tasks.forEach((task, i) => {
    assert.deepEqual(states[i], task.reference.expectedRows, task.id);
    assert.notDeepEqual(seedState, task.reference.expectedRows, `${task.id} asks for no change`);
    assert.deepEqual(task.setup?.command, ['python3', 'examples/sql-agent/seed_db.py', 'shop.db']);
    assert.equal(task.input.database, 'shop.db');
  });
});

void it("the coding tasks are the generator's, and held-out sets b and c share no operation, file or wording with training", () => {
  const out = execFileSync('mktemp', ['-d'], { encoding: 'utf8' }).trim();
  execFileSync('python3', [path.join(root, 'examples/coding/make-tasks.py'), '--out', out], { encoding: 'utf8' });
  for (const name of [
    'train.jsonl',
    'train-hinted.jsonl',
    'eval.jsonl',
    'eval-b.jsonl',
    'eval-c.jsonl',
    'train-varied.jsonl',
    'train-mixed.jsonl',
  ])
    assert.equal(
      read(`examples/coding/tasks/${name}`),
      readFileSync(path.join(out, name), 'utf8'),
      `${name} is stale: run examples/coding/make-tasks.py`,
    );
  type CodingReference = { family: string; file: string; fixed: string };
  // Every training file, the reworded ones included: none shares set b's operations, files or wording.
  const train = ['train', 'train-varied', 'train-mixed'].flatMap((f) => tasksOf(`examples/coding/tasks/${f}.jsonl`));
  const setB = tasksOf('examples/coding/tasks/eval-b.jsonl');
  const setC = tasksOf('examples/coding/tasks/eval-c.jsonl');
  const field = (tasks: readonly (typeof train)[number][], k: keyof CodingReference) =>
    new Set(tasks.map((t) => (t.reference as CodingReference)[k]));
  for (const [name, set, others] of [
    ['b', setB, train],
    ['c', setC, [...train, ...setB]],
  ] as const)
    for (const k of ['family', 'file', 'fixed'] as const)
      assert.deepEqual(
        [...field(set, k)].filter((v) => field(others, k).has(v)),
        [],
        `set ${name} ${k}s`,
      );
  // Set c's lines are ones a plain `sed 's/old/new/'` takes as written: no delimiter, bracket, star, backslash,
  // anchor, `&` or quote in the buggy line or its fix.
  const lineOf = (t: (typeof setC)[number]) =>
    /\n {4}(.*)\n/.exec(JSON.parse(t.setup!.command.at(-1)!)[(t.reference as CodingReference).file])![1]!;
  for (const t of setC) {
    const ref = t.reference as CodingReference;
    assert.doesNotMatch(`${lineOf(t)}\n${ref.fixed}`, /[/[\]*\\^$&'"]/, t.id);
  }
  assert.deepEqual([...new Set(setC.map((t) => t.kind))].sort(), ['bare', 'hinted']);
  assert.deepEqual(
    train.filter((t) => /Hint: change/.test(t.input.instructions!)).map((t) => t.id),
    [],
    "set b's hint phrasing",
  );
  const firstLine = (t: (typeof train)[number]) => t.input.instructions!.split('\n')[0];
  for (const set of [setB, setC])
    assert.deepEqual(
      set.map(firstLine).filter((l) => new Set([...train, ...(set === setC ? setB : [])].map(firstLine)).has(l)),
      [],
    );
  // Each task is solvable and not solved already: the bug fails its visible and hidden checks, the fix passes them.
  const script = `
import json, re, sys
for t in json.load(sys.stdin):
    files = json.loads(t["setup"]["command"][-1])
    module = t["reference"]["file"]
    source = files[module]
    checks = [l.strip() for text in (t["hidden"]["files"]["hidden_tests/test_hidden.py"], files["tests/test_" + module]) for l in text.splitlines() if l.strip().startswith("assert")]
    bug = re.search(r"\\n    (.*)\\n", source).group(1)
    for code, passes in ((source, False), (source.replace(bug, t["reference"]["fixed"]), True)):
        ns = {}
        exec(code, ns)
        results = []
        for check in checks:
            try:
                exec(check, ns)
                results.append(True)
            except AssertionError:
                results.append(False)
        assert all(results) == passes, (t["id"], code, results)
print("ok")`;
  const tasks = [...train, ...tasksOf('examples/coding/tasks/eval.jsonl'), ...setB, ...setC];
  assert.equal(
    execFileSync('python3', ['-c', script], { input: JSON.stringify(tasks), encoding: 'utf8' }).trim(),
    'ok',
  );
});
