import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runAgent } from './run-agent.js';
// The model is the FAKE scripted chat server (test/examples/scripted-openai-server.ts); the agents are real processes.
import { startScriptedServer, type ScriptedReply } from './scripted-openai-server.js';

const root = path.resolve(import.meta.dirname, '../..');
// The same protocol in two languages: every scenario runs against both, as real processes.
const agents: Record<string, string[]> = {
  'calculator-ts': ['node', '--import', 'tsx', path.join(root, 'examples/calculator-ts/agent.ts')],
  'calculator-py': [path.join(root, '.venv/bin/python'), path.join(root, 'examples/calculator-py/agent.py')],
};
// `--import tsx` resolves from the cwd; from a workdir outside the repo the tsx CLI is named by absolute path.
const anywhereArgv: Record<string, string[]> = {
  ...agents,
  'calculator-ts': [path.join(root, 'node_modules/.bin/tsx'), path.join(root, 'examples/calculator-ts/agent.ts')],
};

function makeWorkdir(): string {
  mkdirSync(path.join(root, '.volt'), { recursive: true });
  return mkdtempSync(path.join(root, '.volt', 'test-examples-'));
}

async function runScripted(
  argv: string[],
  replies: ScriptedReply[],
  task: unknown,
  extraEnv: Record<string, string> = {},
) {
  const server = await startScriptedServer(replies);
  // The workdir sits inside the repo so `--import tsx` resolves from node_modules, as under the rollout runner.
  const workdir = makeWorkdir();
  const outputFile = path.join(workdir, 'answer.txt');
  try {
    const run = await runAgent(
      argv,
      {
        OPENAI_BASE_URL: server.baseUrl,
        OPENAI_API_KEY: 'rollout-token-123',
        VOLT_TASK: JSON.stringify(task),
        VOLT_OUTPUT_FILE: outputFile,
        ...extraEnv,
      },
      workdir,
    );
    let output: string | null = null;
    try {
      output = readFileSync(outputFile, 'utf8');
    } catch {
      output = null;
    }
    return { run, output, requests: server.requests, auth: server.authHeaders };
  } finally {
    await server.close();
    rmSync(workdir, { recursive: true, force: true });
  }
}

const lastUser = (messages: { role: string; content: string }[]) =>
  messages.filter((m) => m.role === 'user').at(-1)?.content;
const HINT = 'Use <calc>expression</calc> to calculate, then <answer>number</answer>.';
const task = {
  id: 'shop-1',
  input: { question: 'A shop has 23 boxes of 12 pens and sells 45 pens. How many pens are left?' },
};

for (const [name, argv] of Object.entries(agents)) {
  void describe(`${name} agent against a scripted OpenAI server`, () => {
    void it('asks, computes with the calculator, answers, and writes VOLT_OUTPUT_FILE', async () => {
      const { run, output, requests, auth } = await runScripted(
        argv,
        ['<calc>23*12-45</calc> then', '<answer>231</answer>'],
        task,
        { OPENAI_MODEL: 'my-policy', AGENT_TEMPERATURE: '0.7' },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(output, '231');
      assert.equal(run.stdout.trim(), '231');
      assert.equal(requests.length, 2);
      assert.deepEqual(auth, ['Bearer rollout-token-123', 'Bearer rollout-token-123']);
      const [first, second] = requests;
      assert.equal(first?.model, 'my-policy');
      assert.equal(first?.temperature, 0.7);
      assert.equal(first?.max_tokens, 64);
      assert.equal(lastUser(first!.messages), `${task.input.question}\n${HINT}`);
      // The assistant turn is kept as the server sent it (cut at the stop string) and the result follows.
      assert.deepEqual(second!.messages.slice(-2), [
        { role: 'assistant', content: '<calc>23*12-45' },
        { role: 'user', content: 'Result: 231' },
      ]);
    });

    void it('evaluates precedence and parentheses, and reports calculator errors to the model', async () => {
      const { run, output, requests } = await runScripted(
        argv,
        [
          '<calc>(2 + 3) * 4 - 6 / 4 (chairs)</calc>',
          '<calc>5/0</calc>',
          '<calc>__import__("os")</calc>',
          '<answer>18.5</answer>',
        ],
        task,
      );
      assert.equal(run.code, 0, run.stderr);
      assert.equal(output, '18.5');
      assert.equal(lastUser(requests[1]!.messages), 'Result: 18.5');
      assert.match(lastUser(requests[2]!.messages) ?? '', /^Error: division by zero/);
      assert.match(lastUser(requests[3]!.messages) ?? '', /^Error: /);
    });

    void it('stops after 4 turns when the model never answers, exiting 0 with an empty answer', async () => {
      const { run, output, requests } = await runScripted(argv, ['I think the answer is big.'], task);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(output, '');
      assert.equal(requests.length, 4);
      assert.match(lastUser(requests[3]!.messages) ?? '', /final answer as <answer>/);
    });

    void it("exits 0 with a wrong answer: judging is the reward's job", async () => {
      const { run, output } = await runScripted(argv, ['<answer>999</answer>'], task);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(output, '999');
    });

    void it('normalises answers stated as arithmetic, and keeps text it cannot read', async () => {
      const stated = await runScripted(argv, ['<answer>3 x 333 = 999 pens</answer>'], task);
      assert.equal(stated.output, '999');
      const expression = await runScripted(argv, ['<answer>23*12 - 45 (pens)</answer>'], task);
      assert.equal(expression.output, '231');
      const prose = await runScripted(argv, ['<answer>about two hundred</answer>'], task);
      assert.equal(prose.output, 'about two hundred');
    });

    void it('reads the task from VOLT_TASK_FILE, from a workdir outside the repo', async () => {
      const workdir = mkdtempSync(path.join(tmpdir(), 'volt-task-'));
      const file = path.join(workdir, 'task.json');
      writeFileSync(file, JSON.stringify(task));
      const server = await startScriptedServer(['<answer>231</answer>']);
      try {
        const run = await runAgent(
          anywhereArgv[name]!,
          { OPENAI_BASE_URL: server.baseUrl, OPENAI_API_KEY: 'k', VOLT_TASK_FILE: file },
          workdir,
        );
        assert.equal(run.code, 0, run.stderr);
        assert.equal(run.stdout.trim(), '231');
        assert.equal(lastUser(server.requests[0]!.messages), `${task.input.question}\n${HINT}`);
      } finally {
        await server.close();
        rmSync(workdir, { recursive: true, force: true });
      }
    });

    void it('fails with a message naming the field on a bad task', async () => {
      const { run, requests } = await runScripted(argv, ['<answer>1</answer>'], { id: 'x', input: { prompt: 'hi' } });
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /input\.question/);
      assert.equal(requests.length, 0);
    });

    void it('fails (non-zero) when the model endpoint keeps failing', async () => {
      const { run } = await runScripted(argv, [{ status: 400 }], task);
      assert.notEqual(run.code, 0);
      assert.match(run.stderr, /calculator agent failed/);
    });
  });
}
