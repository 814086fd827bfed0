import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { parseRunConfig } from '../../src/config/run.js';
import { rewardsFileSchema } from '../../src/contracts/rewards.js';
import { keys } from '../../src/storage/keys.js';
import { createObjectStore } from '../../src/storage/object-store.js';
import { MODEL_ADMIN_KEY, startModelServer } from '../gateway/model-server.js';
import { makeMarkerAdapter } from '../helpers/lora-adapters.js';
import { iterationSpans, root, startPipelineStack, tinyRunConfig, trainToEnd, type PipelineStack } from './harness.js';

// Distillation end to end on real parts: the teacher is a second model server serving a real LoRA adapter of the same
// base with a habit the base lacks (it answers "VOLT"); the run's one warm-start iteration is served by it through the
// gateway, its answers are retokenized by the student's server, fitted by SFT, and the student's held-out score moves
// from the base's toward the teacher's.
const ANSWER = 'VOLT';
const SUFFIX = ' Answer with a number only.'; // what test/pipeline/agents/one-call.mjs appends to every question
const TRAIN = ['What is 3 plus 4?', 'What is 12 minus 9?', 'What is 7 times 6?', 'What is 40 divided by 2?'];
const HELD_OUT = ['What is 15 plus 27?', 'What is 81 minus 19?', 'What is 9 times 8?', 'What is 64 divided by 4?'];
const TEACHER_MODEL = 'teacher-adapter';

describe('a run distilled from a teacher (one SFT warm-start iteration)', { timeout: 1_800_000 }, () => {
  let stack: PipelineStack;
  let worker: ChildProcess;
  let teacher: Awaited<ReturnType<typeof startModelServer>>;
  let dir: string;
  before(async () => {
    stack = await startPipelineStack();
    dir = fs.mkdtempSync(path.join(stack.services.dataDir, 'distill-'));
    // The teacher learns its habit on other questions than the run's, so its held-out answers are its own habit.
    const teacherQuestions = ['What is 5 plus 5?', 'What is 18 minus 2?', 'Name a colour.', 'Who wrote Hamlet?'];
    let adapter: string;
    [teacher, adapter] = await Promise.all([
      startModelServer({ readyMs: 600_000 }),
      makeMarkerAdapter(
        path.join(dir, 'teacher'),
        ANSWER,
        teacherQuestions.map((q) => q + SUFFIX),
      ),
    ]);
    const load = await request(`${teacher.url}/v1/load_lora_adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${MODEL_ADMIN_KEY}` },
      body: JSON.stringify({ lora_name: TEACHER_MODEL, lora_path: adapter }),
    });
    assert.equal(load.statusCode, 200, await load.body.text());
    stack.vars.VOLT_TEACHER_API_KEY = 'sk-teacher'; // the gateway's environment holds the key, never the run
    await stack.startGateway();
    worker = await stack.startWorker('all');
  });
  after(async () => {
    worker?.kill('SIGKILL');
    await teacher?.stop();
    await stack?.stop();
  });

  /** The teacher's own held-out score: the agent's exact request, straight to the teacher. */
  async function teacherScore(): Promise<number> {
    let solved = 0;
    for (const q of HELD_OUT) {
      const res = await request(`${teacher.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: TEACHER_MODEL,
          messages: [{ role: 'user', content: q + SUFFIX }],
          max_tokens: 24,
          temperature: 0,
        }),
      });
      const body = (await res.body.json()) as { choices: { message: { content: string } }[] };
      if (body.choices[0]!.message.content.includes(ANSWER)) solved++;
    }
    return solved / HELD_OUT.length;
  }

  it('trains the student on the teacher-served rollouts and moves its held-out score toward the teacher', async (t) => {
    const tasksFile = (name: string, questions: string[]) => {
      const file = path.join(dir, `${name}.jsonl`);
      const rows = questions.map((question, i) => ({
        id: `${name}-${i}`,
        input: { question },
        reference: { answer: ANSWER },
      }));
      fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      return file;
    };
    const base = tinyRunConfig('distill-run');
    const config = parseRunConfig({
      ...base,
      agent: {
        command: [process.execPath, path.join(root, 'test/pipeline/agents/one-call.mjs')],
        envAllowList: ['PATH', 'HOME'],
        env: { AGENT_TEMPERATURE: '0', AGENT_MAX_TOKENS: '8' },
        timeoutSec: 120,
      },
      tasks: { trainFile: tasksFile('train', TRAIN), evalFile: tasksFile('eval', HELD_OUT) },
      rollouts: { groupSize: 2, tasksPerIteration: 4, concurrency: 2 },
      reward: {
        kind: 'weighted_sum',
        parts: { marker: { kind: 'string_match', source: 'output_file', pattern: `(${ANSWER})`, weight: 1 } },
      },
      teacher: { baseUrl: `${teacher.url}/v1`, model: TEACHER_MODEL },
      batch: { warmStartIterations: 1, minGroupSize: 2 },
      trainer: { lr: 3e-3, epochs: 3, minibatchSize: 4, microBatchSize: 4 },
      eval: { tasks: HELD_OUT.length, everyIterations: 1, promoteMargin: 0 },
    });
    const status = await trainToEnd(stack.env, config);
    const store = createObjectStore(stack.env);
    const spans = await iterationSpans(stack.env, 'distill-run', 0);
    const it0 = status.history[0]!;
    const seen = `history ${JSON.stringify(it0)}; ${spans.length} spans`;
    assert.equal(status.phase, 'done', seen);
    assert.equal(it0.objective, 'sft', seen);
    assert.equal(it0.infraFailed, 0, seen);

    // The training rollouts were the teacher's: retokenized by the student, no logprobs, and they did the task.
    const train = spans.filter((s) => s.mode === 'train');
    assert.equal(train.length, TRAIN.length * 2, seen);
    for (const s of train) {
      assert.equal(s.status, 'ok', seen);
      assert.equal(s.tokens, 'student_tokenizer');
      assert.ok(s.choices[0]!.tokenIds!.length > 0 && s.promptTokenIds!.length > 0);
      assert.equal(s.choices[0]!.logprobs ?? null, null);
      assert.match(s.choices[0]!.text, new RegExp(ANSWER));
    }
    assert.equal(it0.meanReward, 1, `every teacher-served rollout passed: ${seen}`);
    assert.equal(it0.samples, TRAIN.length * 2, `SFT took every passing rollout: ${seen}`);
    // Evaluation sampled the student: engine tokens with logprobs, never the teacher.
    const evals = spans.filter((s) => s.mode === 'eval');
    assert.ok(evals.length > 0 && evals.every((s) => s.tokens === 'engine'), seen);

    // Held-out: base below teacher, trained student above base (toward the teacher), and promoted for it.
    const baseEval = await store.getJson(keys.evaluation('distill-run', 0, 'base'), rewardsFileSchema);
    const teacherHeldOut = await teacherScore();
    t.diagnostic(
      `held-out: base ${baseEval.meanReward}, student after SFT ${it0.evalScore}, teacher ${teacherHeldOut}`,
    );
    assert.equal(baseEval.meanReward, 0, 'the base never answers the marker');
    assert.equal(teacherHeldOut, 1, 'the teacher answers it on every held-out question');
    assert.ok(it0.evalScore !== null && it0.evalScore > baseEval.meanReward, `student moved toward teacher: ${seen}`);
    assert.equal(it0.promoted, true, seen);
    assert.equal(status.best?.policy.sha256, it0.candidate!.sha256);
  });
});
