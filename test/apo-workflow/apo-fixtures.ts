import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RunConfigInput } from '../../src/config/run.js';
import type { Span } from '../../src/contracts/span.js';
import { keys } from '../../src/storage/keys.js';
import { readSpans } from '../../src/storage/spans.js';
import type { ObjectStore } from '../../src/storage/object-store.js';
import { root, tinyRunConfig } from '../pipeline/harness.js';
import { rolloutOutcomeRecordSchema } from '../../src/contracts/rollout-outcome.js';

type Task = { id: string; input: { question: string }; reference: { answer: number } };
const plain = (id: string, a: number, b: number): Task => ({
  id,
  input: { question: `What is ${a} + ${b}?` },
  reference: { answer: a + b },
});

/**
 * Task files for APO runs that fit a shared 2-core machine: `training` tasks of one kind (one-digit sums the 135M
 * model mostly solves, so there are successes to bootstrap; real calculator word problems it mostly fails, so there
 * are failures to critique) followed by `validation` small additions (the last tasks of the train file are the
 * validation set), and two held-out additions.
 */
export function writeApoTasks(
  training: number,
  validation: number,
  kind: 'small-sums' | 'word-problems',
): { trainFile: string; evalFile: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'volt-apo-tasks-'));
  const lines = readFileSync(path.join(root, 'examples/calculator/tasks/train.jsonl'), 'utf8').trim().split('\n');
  const isWordProblem = (line: string) =>
    !(JSON.parse(line) as { reference: { template: string } }).reference.template.startsWith('plain');
  const train =
    kind === 'word-problems'
      ? lines.filter(isWordProblem).slice(0, training)
      : Array.from({ length: training }, (_, i) => JSON.stringify(plain(`sum-${i}`, 2 + i, 3 + (i % 4))));
  const added = Array.from({ length: validation }, (_, i) => JSON.stringify(plain(`val-${i}`, 12 + i, 7 * (i + 1))));
  const trainFile = path.join(dir, 'train.jsonl');
  const evalFile = path.join(dir, 'eval.jsonl');
  writeFileSync(trainFile, [...train, ...added].join('\n') + '\n');
  writeFileSync(
    evalFile,
    [plain('heldout-0', 21, 14), plain('heldout-1', 33, 9)].map((t) => JSON.stringify(t)).join('\n') + '\n',
  );
  return { trainFile, evalFile };
}

/** A tiny APO run of the real calculator agent: 0/1 rewards, sampling at 0.3 for training, greedy scoring. */
export function apoRunConfig(
  runId: string,
  files: { trainFile: string; evalFile: string },
  apo: NonNullable<RunConfigInput['apo']>,
): RunConfigInput {
  const base = tinyRunConfig(runId);
  return {
    ...base,
    // A shared, busy CPU makes one rollout take a minute or more.
    agent: { ...base.agent, env: { AGENT_TEMPERATURE: '0.3' }, timeoutSec: 600 },
    tasks: files,
    rollouts: { concurrency: 2 },
    reward: { kind: 'numeric_match', source: 'output_file', tolerance: 1e-6 },
    eval: { tasks: 2, temperature: 0 },
    timeouts: { heartbeatSec: 30, rolloutsSec: 3600, updateSec: 900 },
    apo,
  } as RunConfigInput;
}

/** Every span of a rollout's final attempt, in call order. */
export async function rolloutSpans(
  store: ObjectStore,
  runId: string,
  iteration: number,
  rolloutId: string,
): Promise<Span[]> {
  const outcome = await store.getJson(keys.rolloutOutcome(runId, iteration, rolloutId), rolloutOutcomeRecordSchema);
  const spans: Span[] = [];
  for await (const s of readSpans(store, outcome.final.ref)) spans.push(s);
  return spans;
}

type Body = { messages?: { role: string; content: unknown }[] };
/** The system message of a request body as text ('' when there is none). */
export function systemText(body: unknown): string {
  const m = (body as Body).messages?.find((x) => x.role === 'system');
  if (!m) return '';
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
}
