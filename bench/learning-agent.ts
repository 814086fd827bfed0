/**
 * Does an unmodified agent learn its job? One run config, several seeds, a training-time budget: each seed is a Volt
 * training run on the local stack (evaluated greedily on its held-out set after every `eval.everyIterations`, and on
 * `eval.extraSets`, never promoted on), cancelled once its iterations have taken `--minutes`; then one table per seed
 * and a summary: base → the last evaluation within the budget and within the `--mark` minutes, on every held-out set.
 *
 *   node bin/volt.mjs up
 *   node --import tsx bench/learning-agent.ts examples/coding/run.json [--seeds 1,2,3] [--minutes 60] [--mark 15]
 *       [--set rollouts.groupSize=8 ...]   # run-config overrides (dotted path = JSON value)
 *
 * Minutes count every phase of the iterations (rollouts, rewards, batch, update, their evaluations), not the base
 * model's evaluation before the first one. Writes the figures to <dataDir>/bench/learning-agent-<runId>.json.
 * Run it on a quiet machine.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { setPath } from './run-config-overrides.js';

const root = path.resolve(import.meta.dirname, '..');
const dataDir = path.resolve(process.env.VOLT_DATA_DIR ?? path.join(root, '.volt'));
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    minutes: { type: 'string', default: '60' },
    mark: { type: 'string', default: '15' },
    tag: { type: 'string', default: String(Date.now()) },
    set: { type: 'string', multiple: true, default: [] },
  },
});
if (positionals.length !== 1) {
  console.error('usage: node --import tsx bench/learning-agent.ts <run.json> [--seeds 1,2,3] [--minutes 60] ...');
  process.exit(2);
}
const configFile = path.resolve(positionals[0]!);
const seeds = values.seeds.split(',').map(Number);
const budgetS = Number(values.minutes) * 60;
const markS = Number(values.mark) * 60;
const cli = [path.join(root, 'bin/volt.mjs')];

interface ScoreCounts {
  rewardSum: number;
  tasks: number;
}
interface Counts {
  score?: number | null;
  byKind?: Record<string, ScoreCounts>;
  extraSets?: ({ name: string; score: number | null } & Record<string, unknown>)[];
}
interface Status {
  state?: string;
  baseEval: Counts | null;
  history: {
    iteration: number;
    evalScore: number | null;
    eval: Counts | null;
    promoted: boolean;
    objective?: string;
    dynamicSampling: unknown;
    meanReward: number;
    samples: number;
    timeline: { seconds: Record<string, number> };
  }[];
}

/** One evaluation point: the held-out scores after `minutes` of iterations (0: the base model). */
interface Point {
  iteration: number | null;
  minutes: number;
  scores: Record<string, number>;
  kinds: Record<string, string>;
  promoted: boolean;
}

function capture(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...cli, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`volt ${args.join(' ')}: ${code}\n${err}`)),
    );
  });
}

const status = async (runId: string): Promise<Status | null> =>
  capture(['run-status', runId, '--json']).then(
    (text) => JSON.parse(text) as Status,
    () => null,
  );

const iterationSeconds = (h: Status['history'][number]) => Object.values(h.timeline.seconds).reduce((a, b) => a + b, 0);

function scoresOf(
  c: Counts | null,
  score?: number | null,
): { scores: Record<string, number>; kinds: Record<string, string> } {
  const scores: Record<string, number> = {};
  const kinds: Record<string, string> = {};
  if (!c) return { scores, kinds };
  // A candidate's counts carry no score: its iteration's evalScore is that score.
  const main = c.score ?? score;
  if (typeof main === 'number') scores.main = main;
  for (const [kind, k] of Object.entries(c.byKind ?? {})) kinds[kind] = `${+k.rewardSum.toFixed(2)}/${k.tasks}`;
  for (const s of c.extraSets ?? []) if (typeof s.score === 'number') scores[s.name] = s.score;
  return { scores, kinds };
}

async function runSeed(seed: number): Promise<{ runId: string; points: Point[]; cancelled: boolean }> {
  const config = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const runId = `${config.runId}-${values.tag}-s${seed}`;
  Object.assign(config, { runId, seed });
  for (const assignment of values.set) setPath(config, assignment);
  const file = path.join(dataDir, 'bench', `${runId}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  // Task files are relative to where the run starts: the repo root, like `volt train` from a checkout.
  const train = spawn(process.execPath, [...cli, 'train', file, '--follow'], { cwd: root, stdio: 'inherit' });
  const ended = new Promise<number | null>((resolve) => train.on('exit', resolve));
  let cancelled = false;
  let done = false;
  void ended.then(() => (done = true));
  while (!done) {
    await Promise.race([sleep(20_000), ended]);
    const s = await status(runId);
    if (!s || cancelled) continue;
    const spent = s.history.reduce((a, h) => a + iterationSeconds(h), 0);
    if (spent >= budgetS) {
      console.log(`\n[bench] seed ${seed}: ${Math.round(spent / 60)} min of iterations, budget spent: cancelling`);
      cancelled = true;
      await capture(['cancel', runId]).catch((e: Error) => console.error(`[bench] cancel failed: ${e.message}`));
    }
  }
  const s = await status(runId);
  if (!s) throw new Error(`no status for ${runId}`);
  const points: Point[] = [{ iteration: null, minutes: 0, promoted: false, ...scoresOf(s.baseEval) }];
  let spent = 0;
  for (const h of s.history) {
    spent += iterationSeconds(h);
    if (spent > budgetS) break;
    if (h.eval)
      points.push({
        iteration: h.iteration,
        minutes: spent / 60,
        promoted: h.promoted,
        ...scoresOf(h.eval, h.evalScore),
      });
  }
  return { runId, points, cancelled };
}

const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '—' : `${(100 * x).toFixed(1)}%`);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const atMark = (points: Point[], minutes: number) => points.filter((p) => p.minutes <= minutes).at(-1)!;

mkdirSync(path.join(dataDir, 'bench'), { recursive: true });
const results: Record<number, Awaited<ReturnType<typeof runSeed>>> = {};
for (const seed of seeds) results[seed] = await runSeed(seed);
const sets = [...new Set(Object.values(results).flatMap((r) => r.points.flatMap((p) => Object.keys(p.scores))))];
const out = path.join(dataDir, 'bench', `learning-agent-${path.basename(configFile, '.json')}-${values.tag}.json`);
writeFileSync(out, JSON.stringify({ configFile, overrides: values.set, budgetS, markS, seeds, results }, null, 2));

console.log(
  `\n${path.relative(root, configFile)} ${values.set.join(' ')}: held-out scores (greedy) by minutes of iterations`,
);
for (const seed of seeds) {
  const r = results[seed]!;
  console.log(`\nseed ${seed} (${r.runId}${r.cancelled ? ', cancelled at the budget' : ''})`);
  console.log(`| after | minutes | ${sets.join(' | ')} | by kind (main) |`);
  console.log(`|---|---|${sets.map(() => '---').join('|')}|---|`);
  for (const p of r.points) {
    const label = p.iteration === null ? 'base' : `iteration ${p.iteration}${p.promoted ? ' (promoted)' : ''}`;
    const kinds = Object.entries(p.kinds)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    console.log(`| ${label} | ${p.minutes.toFixed(1)} | ${sets.map((s) => pct(p.scores[s])).join(' | ')} | ${kinds} |`);
  }
}
console.log(
  `\nsummary over seeds ${seeds.join(', ')}: gain in points (mean; worst seed), base → the last evaluation within`,
);
console.log(`| set | base | at ${values.mark} min | gain | worst | at ${values.minutes} min | gain | worst |`);
console.log('|---|---|---|---|---|---|---|---|');
for (const set of sets) {
  const base = seeds.map((s) => results[s]!.points[0]!.scores[set] ?? NaN);
  const cells = [markS / 60, budgetS / 60].map((m) => {
    const at = seeds.map((s) => atMark(results[s]!.points, m).scores[set] ?? NaN);
    const gains = at.map((a, i) => 100 * (a - base[i]!));
    return `${pct(mean(at))} | ${mean(gains).toFixed(1)} | ${Math.min(...gains).toFixed(1)}`;
  });
  console.log(`| ${set} | ${pct(mean(base))} | ${cells.join(' | ')} |`);
}
console.log(`figures: ${out}`);
