import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import {
  createOptimizerClient,
  OptimizerUnavailableError,
  type OptimizerConfig,
} from '../../src/apo/optimizer-client.js';
import { digestFromSpans, type RolloutDigest } from '../../src/apo/rollout-digest.js';
import { parsePromptTag, proposeEdit, selectFailures, type EditInput } from '../../src/apo/textual-gradient.js';
import { FailureType } from '../../src/contracts/failures.js';
import type { PromptOverlay } from '../../src/contracts/prompt-overlay.js';
import { CALC_SYSTEM, calcTask, calculatorRollout } from './calculator-spans.js';
import { startScriptedOptimizer, type ScriptedOptimizer } from './scripted-optimizer.js';

const KEY_ENV = 'VOLT_TEST_OPTIMIZER_KEY';
const env = { [KEY_ENV]: 'sk-optimizer' };
const cfg = (baseUrl: string): OptimizerConfig => ({
  baseUrl,
  model: 'critic-large',
  apiKeyEnv: KEY_ENV,
  temperature: 0.3,
  failuresPerCritique: 2,
});

function failure(i: number): RolloutDigest {
  const task = calcTask(`t${i}`, `What is ${i} times 9?`, i * 9);
  const spans = calculatorRollout({ runId: 'tg', iteration: 1, rolloutId: `r${i}`, attempt: 0 }, task, {
    calc: `${i}*9`,
    result: String(i * 9),
    answer: String(i * 9 + 1),
  });
  return digestFromSpans(spans, task, { rolloutId: `r${i}`, reward: 0 });
}

const input = (over: Partial<EditInput> = {}): EditInput => ({
  parent: { version: 0, overlay: null },
  originalPrompt: CALC_SYSTEM,
  failures: [failure(3), failure(4)],
  ...over,
});

describe('textual gradients against the scripted FAKE optimiser', () => {
  const fakes: ScriptedOptimizer[] = [];
  const start = async (...args: Parameters<typeof startScriptedOptimizer>) => {
    const fake = await startScriptedOptimizer(...args);
    fakes.push(fake);
    return fake;
  };
  afterEach(async () => {
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  it('sends the current prompt and the failed transcripts with expected answers, then asks for an edit in the same conversation', async () => {
    const fake = await start(
      [
        '1. The prompt never says to check the result.',
        'Here it is:\n<prompt>\n{{original}}\nCheck the result before you answer.\n</prompt>',
      ],
      { apiKey: 'sk-optimizer' },
    );
    const outcome = await proposeEdit(createOptimizerClient(cfg(fake.baseUrl), { env }), input());
    assert.deepEqual(outcome, {
      proposal: {
        mode: 'replace',
        template: '{{original}}\nCheck the result before you answer.',
        note: 'critique of 2 failed rollouts: 1. The prompt never says to check the result.',
      },
    });
    assert.equal(fake.requests.length, 2);
    const [critique, edit] = fake.requests;
    assert.equal(critique!.model, 'critic-large');
    assert.equal(critique!.temperature, 0.3);
    assert.deepEqual(fake.authHeaders, ['Bearer sk-optimizer', 'Bearer sk-optimizer']);
    const user = critique!.messages[1]!.content;
    assert.equal(critique!.messages[0]!.role, 'system');
    assert.ok(
      user.includes(`<current_prompt>\n${CALC_SYSTEM}\n</current_prompt>`),
      'the current prompt reaches the optimiser',
    );
    for (const i of [3, 4]) {
      assert.ok(user.includes(`Task: What is ${i} times 9?`));
      assert.ok(user.includes(`Expected answer: ${i * 9}`));
      assert.ok(
        user.includes(`assistant: <answer>${i * 9 + 1}</answer>`),
        'the failed transcript reaches the optimiser',
      );
    }
    assert.deepEqual(edit!.messages.slice(0, 2), critique!.messages);
    assert.deepEqual(edit!.messages[2], {
      role: 'assistant',
      content: '1. The prompt never says to check the result.',
    });
    assert.match(edit!.messages[3]!.content, /between <prompt> and <\/prompt>/);
    assert.match(edit!.messages[3]!.content, /You may write \{\{original\}\}/);
  });

  it("shows an overlay parent rendered, with {{original}} as the agent's text, and keeps no {{original}} the optimiser dropped", async () => {
    const fake = await start(['Too vague.', '<prompt>Solve step by step. End with <answer>number</answer>.</prompt>']);
    const overlay: PromptOverlay = {
      runId: 'tg',
      version: 2,
      mode: 'replace',
      template: 'Be exact.\n{{original}}',
      origin: { strategy: 'manual', parents: [0], round: null, note: '' },
      createdAt: '2026-01-01T00:00:00Z',
    };
    const outcome = await proposeEdit(
      createOptimizerClient(cfg(fake.baseUrl), { env }),
      input({ parent: { version: 2, overlay } }),
    );
    assert.ok('proposal' in outcome);
    assert.equal(outcome.proposal.template, 'Solve step by step. End with <answer>number</answer>.');
    const user = fake.requests[0]!.messages[1]!.content;
    assert.ok(user.includes(`<current_prompt>\nBe exact.\n${CALC_SYSTEM}\n</current_prompt>`));
    assert.ok(user.includes(`<original_prompt>\n${CALC_SYSTEM}\n</original_prompt>`));
  });

  it('skips a child whose edit has no <prompt> tags, or an empty or unchanged one, without throwing', async () => {
    const fake = await start([
      'critique',
      'I would rewrite it as follows: be careful.',
      'critique',
      '<prompt>  </prompt>',
      'critique',
      `<prompt>${CALC_SYSTEM}</prompt>`,
    ]);
    const client = createOptimizerClient(cfg(fake.baseUrl), { env });
    assert.deepEqual(await proposeEdit(client, input()), { skipped: 'optimiser answer has no <prompt>…</prompt>' });
    assert.deepEqual(await proposeEdit(client, input()), { skipped: 'optimiser answer has no <prompt>…</prompt>' });
    assert.deepEqual(await proposeEdit(client, input()), { skipped: 'edited prompt is unchanged' });
    assert.deepEqual(await proposeEdit(client, input({ failures: [] })), { skipped: 'no failed rollouts to critique' });
    assert.equal(fake.requests.length, 6);
  });

  it('parses the last complete <prompt> block', () => {
    assert.equal(parsePromptTag('Use <prompt> tags.\n<prompt>A</prompt> then <prompt>\nB\n</prompt>'), 'B');
    assert.equal(parsePromptTag('<prompt>unterminated'), null);
    assert.equal(parsePromptTag(null), null);
  });

  it('fails retryably when the optimiser answers 500 or cannot be reached', async () => {
    const fake = await start([{ status: 500, message: 'overloaded' }]);
    await assert.rejects(
      proposeEdit(createOptimizerClient(cfg(fake.baseUrl), { env }), input()),
      (e: unknown) => e instanceof OptimizerUnavailableError && /HTTP 500: .*overloaded/.test(e.message),
    );
    const closed = await start([]);
    const url = closed.baseUrl;
    await closed.close();
    await assert.rejects(
      proposeEdit(createOptimizerClient(cfg(url), { env, timeoutMs: 2_000 }), input()),
      OptimizerUnavailableError,
    );
  });

  it('fails non-retryably, naming the variable, when the key variable is missing, and on a refused key', async () => {
    const fake = await start(['never used'], { apiKey: 'sk-optimizer' });
    assert.throws(
      () => createOptimizerClient(cfg(fake.baseUrl), { env: {} }),
      (e: unknown) =>
        e instanceof ApplicationFailure &&
        e.nonRetryable &&
        e.type === FailureType.InvalidConfig &&
        e.message.includes(KEY_ENV),
    );
    const wrongKey = createOptimizerClient(cfg(fake.baseUrl), { env: { [KEY_ENV]: 'sk-wrong' } });
    await assert.rejects(
      proposeEdit(wrongKey, input()),
      (e: unknown) =>
        e instanceof ApplicationFailure && e.nonRetryable && /refused the request \(401\)/.test(e.message),
    );
    assert.equal(fake.remaining(), 1);
  });

  it('picks a seeded choice of failures per child, only failures', () => {
    const digests = [...[1, 2, 3, 4, 5, 6].map(failure), { ...failure(7), reward: 1 }];
    const pick = (childIndex: number) =>
      selectFailures(digests, 1, 2, { seed: 1, round: 1, childIndex }).map((d) => d.rolloutId);
    assert.deepEqual(pick(0), pick(0));
    assert.ok(Array.from({ length: 6 }, (_, i) => pick(i).join()).some((p) => p !== pick(0).join()));
    assert.ok(Array.from({ length: 6 }, (_, i) => pick(i)).every((p) => p.length === 2 && !p.includes('r7')));
  });
});
