import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIGEST_LIMITS, digestFromSpans, truncateMiddle } from '../../src/apo/rollout-digest.js';
import { CALC_SYSTEM, calcTask, calculatorRollout } from './calculator-spans.js';

const ref = { runId: 'digest', iteration: 2, rolloutId: 'r1', attempt: 1 };
const task = calcTask('t1', 'What is 6 times 7?', 42);

describe('rollout digests', () => {
  it('keep the conversation of the last call plus its answer, without the system message, which is kept apart', () => {
    const spans = calculatorRollout(ref, task, { calc: '6*7', result: '42', answer: '42' });
    const d = digestFromSpans([spans[1]!, spans[0]!], task, { rolloutId: 'r1', reward: 1 });
    assert.equal(d.agentSystemPrompt, CALC_SYSTEM);
    assert.ok(d.transcript.every((m) => m.role !== 'system'));
    assert.deepEqual(d.transcript.slice(-3), [
      { role: 'assistant', content: '<calc>6*7</calc>' },
      { role: 'user', content: 'Result: 42' },
      { role: 'assistant', content: '<answer>42</answer>' },
    ]);
    assert.equal(d.finalAnswer, '<answer>42</answer>');
    assert.deepEqual(d.task, { question: 'What is 6 times 7?' });
    assert.deepEqual(d.reference, { answer: 42 });
  });

  it('fall back to the last successful call when the last one failed, and have no answer when none succeeded', () => {
    const spans = calculatorRollout(ref, task, { calc: '6*7', result: '42', answer: '42' });
    const failed = { ...spans[1]!, status: 'error' as const, choices: [], error: { status: 502, message: 'upstream' } };
    const d = digestFromSpans([spans[0]!, failed], task, { rolloutId: 'r1', reward: 0 });
    assert.equal(d.finalAnswer, '<calc>6*7</calc>');
    const none = digestFromSpans([{ ...spans[0]!, status: 'error', choices: [] }], task, {
      rolloutId: 'r1',
      reward: 0,
    });
    assert.equal(none.finalAnswer, null);
    assert.equal(none.transcript.at(-1)?.role, 'user');
    assert.equal(digestFromSpans([], task, { rolloutId: 'r1', reward: 0 }).transcript.length, 0);
  });

  it('are bounded: long messages are cut in the middle and long conversations lose their middle turns', () => {
    const long = 'x'.repeat(10_000);
    const messages = [
      { role: 'system', content: CALC_SYSTEM },
      ...Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${long}` })),
    ];
    const [s] = calculatorRollout(ref, task, { calc: '1', result: '1', answer: '1' });
    const d = digestFromSpans([{ ...s!, request: { body: { messages }, headers: {} } }], task, {
      rolloutId: 'r1',
      reward: 0,
    });
    assert.equal(d.transcript.length, DIGEST_LIMITS.headMessages + 1 + DIGEST_LIMITS.tailMessages);
    assert.match(d.transcript[DIGEST_LIMITS.headMessages]!.content, /19 messages omitted/);
    assert.ok(d.transcript.every((m) => m.content.length <= DIGEST_LIMITS.messageChars));
    assert.ok(d.transcript[0]!.content.startsWith('0 xxx'));
    assert.equal(truncateMiddle('short', 10), 'short');
    assert.match(truncateMiddle('a'.repeat(50) + 'b'.repeat(50), 60), /^a+\n\[… \d+ characters cut …\]\nb+$/);
  });

  it('restore the stop string the engine cut off (stop_reason), in the answer and in earlier turns the agent sent back', () => {
    const spans = calculatorRollout(ref, task, { calc: '6*7', result: '42', answer: '42' }, 'cut');
    assert.equal(spans[0]!.choices[0]!.text, '<calc>6*7', 'the engine returns the text without its stop string');
    const d = digestFromSpans(spans, task, { rolloutId: 'r1', reward: 1 });
    assert.equal(d.finalAnswer, '<answer>42</answer>');
    assert.deepEqual(
      d.transcript.slice(-3).map((m) => m.content),
      ['<calc>6*7</calc>', 'Result: 42', '<answer>42</answer>'],
    );
    // The agent's own few-shot example is not a model output and stays as the agent wrote it.
    assert.ok(d.transcript.some((m) => m.content === '<calc>3*5-2</calc>'));
    assert.equal(d.modelCalls, 2);
  });

  it('leave text as it is without a stop string to restore: old spans, a length cut, a stop token id', () => {
    const old = digestFromSpans(
      calculatorRollout(ref, task, { calc: '6*7', result: '42', answer: '42' }, 'cut-unnamed'),
      task,
      { rolloutId: 'r1', reward: 1 },
    );
    assert.equal(old.finalAnswer, '<answer>42');
    assert.equal(old.transcript.at(-3)!.content, '<calc>6*7');
    const [s] = calculatorRollout(ref, task, { answer: '42' }, 'cut');
    const withChoice = (c: Record<string, unknown>) => ({
      ...s!,
      response: { choices: [{ index: 0, message: { role: 'assistant', content: '<answer>42' }, ...c }] },
    });
    for (const choice of [
      { finish_reason: 'length', stop_reason: '</answer>' },
      { finish_reason: 'stop', stop_reason: 7 },
      { finish_reason: 'stop', stop_reason: null },
    ]) {
      assert.equal(
        digestFromSpans([withChoice(choice)], task, { rolloutId: 'r1', reward: 1 }).finalAnswer,
        '<answer>42',
        JSON.stringify(choice),
      );
    }
    assert.equal(
      digestFromSpans([withChoice({ finish_reason: 'stop', stop_reason: '</answer>' })], task, {
        rolloutId: 'r1',
        reward: 1,
      }).finalAnswer,
      '<answer>42</answer>',
    );
  });

  it('count the successful model calls, so a direct answer is told apart from a tool loop', () => {
    const direct = digestFromSpans(calculatorRollout(ref, task, { answer: '42' }, 'cut'), task, {
      rolloutId: 'r1',
      reward: 1,
    });
    assert.equal(direct.modelCalls, 1);
    const spans = calculatorRollout(ref, task, { calc: '6*7', result: '42', answer: '42' });
    assert.equal(
      digestFromSpans([spans[0]!, { ...spans[1]!, status: 'error', choices: [] }], task, { rolloutId: 'r1', reward: 0 })
        .modelCalls,
      1,
    );
  });
});
