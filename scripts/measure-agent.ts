/**
 * Runs an example agent on tasks of a task set against an OpenAI-compatible server and prints its accuracy:
 * a base-model difficulty check for the calculator task sets (numeric answer vs reference.answer).
 *
 *   node --import tsx scripts/measure-agent.ts --base-url http://127.0.0.1:8500/v1 [--tasks FILE] [-n 50]
 *     [--concurrency 2] [--agent ts|py] [--temperature 1.0] [--model NAME]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';

const root = path.resolve(import.meta.dirname, '..');
const AGENTS: Record<string, string[]> = {
  ts: [path.join(root, 'node_modules/.bin/tsx'), path.join(root, 'examples/calculator-ts/agent.ts')],
  py: [path.join(root, '.venv/bin/python'), path.join(root, 'examples/calculator-py/agent.py')],
};
const taskSchema = z.object({
  id: z.string(),
  input: z.object({ question: z.string() }),
  reference: z.object({ answer: z.number() }),
});
type CalcTask = z.infer<typeof taskSchema>;

const optionsSchema = z.object({
  'base-url': z.url(),
  tasks: z.string().default(path.join(root, 'examples/calculator/tasks/eval.jsonl')),
  n: z.coerce.number().int().positive().default(50),
  concurrency: z.coerce.number().int().min(1).max(64).default(2),
  agent: z.enum(['ts', 'py']).default('ts'),
  temperature: z.coerce.number().min(0).max(2).default(1.0),
  model: z.string().default('smollm2-135m-instruct'),
});

/** Reads the number an answer states ("231", "$231.00", "231 pens"); null when there is none. */
export function parseAnswer(text: string): number | null {
  const match = /-?\d[\d,]*(?:\.\d+)?/.exec(text);
  return match ? Number(match[0].replace(/,/g, '')) : null;
}

// Agents still running when the measurement is interrupted are stopped with it, not left behind.
const running = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    running.forEach((child) => child.kill('SIGTERM'));
    process.exit(130);
  });
}

interface Outcome {
  id: string;
  correct: boolean;
  exitCode: number | null;
  answer: string;
  ms: number;
}

function runOne(argv: string[], task: CalcTask, env: Record<string, string>): Promise<Outcome> {
  const workdir = mkdtempSync(path.join(tmpdir(), 'volt-measure-'));
  const outputFile = path.join(workdir, 'answer.txt');
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: workdir,
      stdio: ['ignore', 'ignore', 'ignore'],
      timeout: 600_000,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
        VOLT_TASK: JSON.stringify(task),
        VOLT_OUTPUT_FILE: outputFile,
      },
    });
    running.add(child);
    child.on('error', reject);
    child.on('close', (exitCode) => {
      running.delete(child);
      let answer = '';
      try {
        answer = readFileSync(outputFile, 'utf8');
      } catch {
        answer = '';
      }
      rmSync(workdir, { recursive: true, force: true });
      const value = parseAnswer(answer);
      const correct = value !== null && Math.abs(value - task.reference.answer) < 1e-6;
      resolve({ id: task.id, correct, exitCode, answer, ms: Date.now() - started });
    });
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'base-url': { type: 'string' },
      tasks: { type: 'string' },
      n: { type: 'string', short: 'n' },
      concurrency: { type: 'string' },
      agent: { type: 'string' },
      temperature: { type: 'string' },
      model: { type: 'string' },
    },
  });
  const parsed = optionsSchema.safeParse(values);
  if (!parsed.success)
    throw new Error(parsed.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('; '));
  const opts = parsed.data;
  const lines = readFileSync(opts.tasks, 'utf8')
    .split('\n')
    .filter((l) => l.trim());
  const tasks = lines.slice(0, opts.n).map((l, i) => {
    const task = taskSchema.safeParse(JSON.parse(l));
    if (!task.success)
      throw new Error(
        `${opts.tasks}:${i + 1}: ${task.error.issues[0]?.path.join('.')}: ${task.error.issues[0]?.message}`,
      );
    return task.data;
  });
  const env = {
    OPENAI_BASE_URL: opts['base-url'],
    OPENAI_API_KEY: 'measure',
    OPENAI_MODEL: opts.model,
    AGENT_TEMPERATURE: String(opts.temperature),
  };
  const outcomes: Outcome[] = [];
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const task = tasks[next++]!;
      const outcome = await runOne(AGENTS[opts.agent]!, task, env);
      outcomes.push(outcome);
      console.log(
        `${outcome.correct ? 'ok  ' : 'miss'} ${task.id} want ${task.reference.answer} got ${JSON.stringify(outcome.answer)} exit ${outcome.exitCode} ${outcome.ms} ms`,
      );
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));
  const correct = outcomes.filter((o) => o.correct).length;
  const answered = outcomes.filter((o) => parseAnswer(o.answer) !== null).length;
  const failed = outcomes.filter((o) => o.exitCode !== 0).length;
  const ms = outcomes.map((o) => o.ms).sort((a, b) => a - b);
  console.log(
    `\nagent ${opts.agent}  tasks ${outcomes.length}  concurrency ${opts.concurrency}  temperature ${opts.temperature}`,
  );
  console.log(
    `accuracy ${((correct / outcomes.length) * 100).toFixed(1)}% (${correct}/${outcomes.length})  answered ${answered}  agent failures ${failed}`,
  );
  console.log(`rollout p50 ${ms[Math.floor(ms.length / 2)]} ms  wall ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().catch((error: unknown) => {
    console.error(`measure-agent: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
