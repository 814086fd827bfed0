/**
 * Volt's RL loop beside TRL's GRPOTrainer on the same one-call task (examples/arithmetic), from one command:
 * the same model (SmolLM2-135M-Instruct), LoRA shape, prompt, reward, prompts per step, group size, temperature,
 * learning rate, clip range and KL (none). Volt runs the unmodified agent (examples/arithmetic/agent.py) through the
 * gateway, sandboxed, as a Temporal training run of `--steps` iterations of one optimizer step each; TRL runs
 * bench/learning_trl.py. Both evaluate greedily on the two held-out sets after every step (eval: the training wording;
 * b: other wordings). Prints one table per seed and a summary; writes the figures to <dataDir>/bench/learning-vs-trl.json.
 *
 *   node bin/volt.mjs up    # Volt's side runs on the local stack
 *   node --import tsx bench/learning-vs-trl.ts [--seeds 1,2,3] [--steps 8] [--lr 5e-4] [--only volt|trl]
 *       [--set batch.dropZeroVariance=false ...]   # Volt run-config overrides (dotted path = JSON value), for A/B runs
 *
 * Wall time counts generation and update, not the evaluations, on both sides (Volt: its iterations' phase times
 * except `evaluating`; TRL: its clock stopped while the callback evaluates). Run it on a quiet machine.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { setPath } from './run-config-overrides.js';

const root = path.resolve(import.meta.dirname, '..');
const dataDir = path.resolve(process.env.VOLT_DATA_DIR ?? path.join(root, '.volt'));
const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    steps: { type: 'string', default: '8' },
    lr: { type: 'string', default: '5e-4' },
    prompts: { type: 'string', default: '8' },
    group: { type: 'string', default: '8' },
    only: { type: 'string' },
    tag: { type: 'string', default: String(Date.now()) },
    set: { type: 'string', multiple: true, default: [] },
  },
});
const seeds = values.seeds.split(',').map(Number);
const steps = Number(values.steps);
const lr = Number(values.lr);
const prompts = Number(values.prompts);
const group = Number(values.group);

/** Held-out accuracy on both sets after `step` optimizer steps, and training seconds so far (evaluations excluded). */
interface Point {
  step: number;
  eval: number;
  evalB: number;
  seconds: number;
}

function run(cmd: string, args: string[], onLine: (line: string) => void = () => undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let buffered = '';
    let tail = '';
    child.stdout.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) onLine(line);
    });
    child.stderr.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-4000)));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}\n${tail}`)),
    );
  });
}

async function trl(seed: number): Promise<Point[]> {
  const points: Point[] = [];
  const flags = ['--seed', seed, '--steps', steps, '--lr', lr, '--prompts', prompts, '--group', group].map(String);
  await run(path.join(root, '.venv/bin/python'), ['bench/learning_trl.py', ...flags], (line) => {
    if (!line.startsWith('{"event": "eval"')) return;
    const e = JSON.parse(line) as { step: number; eval: number; eval_b: number; train_seconds: number };
    points.push({ step: e.step, eval: e.eval, evalB: e.eval_b, seconds: e.train_seconds });
    console.log(`  trl  seed ${seed} step ${e.step}: eval ${pct(e.eval)}  b ${pct(e.eval_b)}  ${e.train_seconds} s`);
  });
  return points;
}

interface Counts {
  score?: number | null;
  extraSets?: { name: string; score: number | null }[];
}
interface Status {
  baseEval: Counts;
  history: {
    iteration: number;
    evalScore: number | null;
    eval: Counts | null;
    timeline: { seconds: Record<string, number> };
  }[];
}

async function volt(seed: number): Promise<Point[]> {
  const config = JSON.parse(readFileSync(path.join(root, 'examples/arithmetic/run.json'), 'utf8')) as Record<
    string,
    any // eslint-disable-line @typescript-eslint/no-explicit-any
  >;
  const runId = `arith-vs-trl-${values.tag}-s${seed}`;
  Object.assign(config, { runId, seed, iterations: steps });
  Object.assign(config.trainer, { lr, minibatchSize: prompts * group });
  Object.assign(config.rollouts, { groupSize: group, tasksPerIteration: prompts });
  for (const assignment of values.set) setPath(config, assignment);
  const file = path.join(dataDir, 'bench', `${runId}.json`);
  writeFileSync(file, JSON.stringify(config, null, 2));
  const cli = [path.join(root, 'bin/volt.mjs')];
  await run(process.execPath, [...cli, 'train', file, '--follow'], (line) =>
    console.log(`  volt seed ${seed} ${line}`),
  );
  let json = '';
  await run(process.execPath, [...cli, 'run-status', runId, '--json'], (line) => (json += line));
  const status = JSON.parse(json) as Status;
  const extra = (c: Counts) => c.extraSets?.find((s) => s.name === 'b')?.score ?? NaN;
  const points: Point[] = [{ step: 0, eval: status.baseEval.score ?? NaN, evalB: extra(status.baseEval), seconds: 0 }];
  let seconds = 0;
  for (const h of status.history) {
    for (const [phase, s] of Object.entries(h.timeline.seconds)) if (phase !== 'evaluating') seconds += s;
    points.push({ step: h.iteration + 1, eval: h.evalScore ?? NaN, evalB: h.eval ? extra(h.eval) : NaN, seconds });
  }
  return points;
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '—');
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const last = (ps: Point[]) => ps[ps.length - 1] as Point;

mkdirSync(path.join(dataDir, 'bench'), { recursive: true });
const results: Record<string, Record<number, Point[]>> = { trl: {}, volt: {} };
const sides = values.only ? [values.only] : ['trl', 'volt'];
for (const seed of seeds) {
  for (const side of sides) results[side]![seed] = side === 'trl' ? await trl(seed) : await volt(seed);
}
const out = path.join(dataDir, 'bench', 'learning-vs-trl.json');
writeFileSync(out, JSON.stringify({ steps, lr, prompts, group, seeds, results }, null, 2));

console.log(
  `\nheld-out accuracy after each step (greedy; eval = 60 tasks in the training wording, b = 60 reworded), ${prompts} prompts × ${group} samples a step, lr ${lr}`,
);
for (const seed of seeds) {
  console.log(`\nseed ${seed}\n| step | ${sides.map((s) => `${s} eval | ${s} b | ${s} s`).join(' | ')} |`);
  console.log(`|---|${sides.map(() => '---|---|---').join('|')}|`);
  for (let step = 0; step <= steps; step++) {
    const cells = sides.map((side) => {
      const p = results[side]![seed]!.find((q) => q.step === step);
      return p ? `${pct(p.eval)} | ${pct(p.evalB)} | ${p.seconds.toFixed(0)}` : '— | — | —';
    });
    console.log(`| ${step} | ${cells.join(' | ')} |`);
  }
}
console.log(`\nsummary over seeds ${seeds.join(', ')} (mean; gain = after the last step − base, in points)`);
console.log('| trainer | base eval | final eval | gain eval | base b | final b | gain b | training s |');
console.log('|---|---|---|---|---|---|---|---|');
for (const side of sides) {
  const runs = seeds.map((s) => results[side]![s]!);
  const base = mean(runs.map((r) => r[0]!.eval));
  const fin = mean(runs.map((r) => last(r).eval));
  const baseB = mean(runs.map((r) => r[0]!.evalB));
  const finB = mean(runs.map((r) => last(r).evalB));
  const secs = mean(runs.map((r) => last(r).seconds));
  const gain = (a: number, b: number) => `${(100 * (b - a)).toFixed(1)}`;
  console.log(
    `| ${side} | ${pct(base)} | ${pct(fin)} | ${gain(base, fin)} | ${pct(baseB)} | ${pct(finB)} | ${gain(baseB, finB)} | ${secs.toFixed(0)} |`,
  );
}
if (sides.length === 2) {
  // Per seed: the first step at which Volt's held-out accuracy reaches TRL's final one, and the time it took.
  const ratios = seeds.map((s) => {
    const target = last(results.trl![s]!).eval;
    const reached = results.volt![s]!.find((p) => p.step > 0 && p.eval >= target);
    return reached ? reached.seconds / last(results.trl![s]!).seconds : NaN;
  });
  console.log(
    `\nVolt's time to TRL's final held-out accuracy ÷ TRL's time, per seed: ${ratios.map((r) => (Number.isFinite(r) ? r.toFixed(2) : 'not reached')).join(', ')}`,
  );
}
console.log(`figures: ${out}`);
