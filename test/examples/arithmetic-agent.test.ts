import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runConfigSchema } from '../../src/config/run.js';
import { runAgent } from './run-agent.js';
// The model is the FAKE scripted chat server (test/examples/scripted-openai-server.ts); the agent is a real process.
import { startScriptedServer } from './scripted-openai-server.js';

const root = path.resolve(import.meta.dirname, '../..');
const python = path.join(root, '.venv/bin/python');
const tasksDir = path.join(root, 'examples/arithmetic/tasks');
const prompt = JSON.parse(readFileSync(path.join(root, 'examples/arithmetic/prompt.json'), 'utf8')) as {
  system: string;
  example: { role: string; content: string }[];
};
type Task = { id: string; input: { question: string }; reference: { answer: number }; kind: string };
const read = (name: string) =>
  readFileSync(path.join(tasksDir, name), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Task);

async function ask(reply: string, question = 'What is 59 + 63?') {
  const server = await startScriptedServer([reply]);
  mkdirSync(path.join(root, '.volt'), { recursive: true });
  const workdir = mkdtempSync(path.join(root, '.volt', 'test-arithmetic-'));
  const outputFile = path.join(workdir, 'answer.txt');
  try {
    const run = await runAgent(
      ['node', path.join(root, 'examples/arithmetic/agent.mjs')],
      {
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: 'tok-1',
        AGENT_TEMPERATURE: '0.5',
        VOLT_TASK: JSON.stringify({ id: 't', input: { question } }),
        VOLT_OUTPUT_FILE: outputFile,
      },
      workdir,
    );
    assert.equal(run.code, 0, run.stderr);
    return { answer: readFileSync(outputFile, 'utf8'), requests: server.requests };
  } finally {
    await server.close();
    rmSync(workdir, { recursive: true, force: true });
  }
}

void describe('the one-call arithmetic example', () => {
  void it('has reproducible, disjoint task sets whose references are the arithmetic of their questions', () => {
    execFileSync(python, [path.join(root, 'examples/arithmetic/make-tasks.py'), '--check']);
    const sets = ['train.jsonl', 'eval.jsonl', 'eval-b.jsonl'].map(read);
    const operands = (t: Task) => (t.input.question.match(/\d+/g) ?? []).map(Number);
    for (const t of sets.flat()) {
      const [a, b] = operands(t) as [number, number];
      // "take 23 from 80" and "Subtract 23 from 80" name the subtrahend first
      const difference = / from /.test(t.input.question) ? b - a : a - b;
      assert.equal(t.reference.answer, { add: a + b, sub: difference, mul: a * b }[t.kind], t.input.question);
    }
    const key = (t: Task) => `${t.kind}:${operands(t).join(',')}`;
    const seen = new Set(sets.flat().map(key));
    assert.equal(seen.size, sets.flat().length, 'no problem appears twice, across sets either');
    assert.ok(
      sets[2]!.every((t) => !t.input.question.startsWith('What is ')),
      'set b is worded otherwise',
    );
  });

  void it('its run config is valid and names the agent, tasks and extra held-out set that exist', () => {
    const config = runConfigSchema.parse(
      JSON.parse(readFileSync(path.join(root, 'examples/arithmetic/run.json'), 'utf8')),
    );
    for (const file of [config.tasks.trainFile, config.tasks.evalFile, ...config.eval.extraSets.map((s) => s.file)])
      assert.ok(readFileSync(path.join(root, file as string)).length > 0, String(file));
    assert.deepEqual(config.agent.command, ['node', 'examples/arithmetic/agent.mjs']);
  });

  void it('sends the prompt of prompt.json with the question, and answers with the reply’s last number', async () => {
    const { answer, requests } = await ask('59 + 63 = 122');
    assert.equal(answer, '122');
    assert.equal(requests.length, 1);
    assert.deepEqual(requests[0]!.messages, [
      { role: 'system', content: prompt.system },
      ...prompt.example,
      { role: 'user', content: 'What is 59 + 63?' },
    ]);
    assert.equal(requests[0]!.max_tokens, 32);
    assert.equal(requests[0]!.temperature, 0.5);
    assert.equal((await ask('It is 1,234.')).answer, '1234');
    assert.equal((await ask('3 * 21 = 66.7')).answer, '66.7');
    assert.equal((await ask('I cannot say.')).answer, '', 'no number: an empty answer, which the reward scores 0');
  });
});
