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
      { role: 'assistant', content: '<calc>6*7</calc>' }, { role: 'user', content: 'Result: 42' }, { role: 'assistant', content: '<answer>42</answer>' },
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
    const none = digestFromSpans([{ ...spans[0]!, status: 'error', choices: [] }], task, { rolloutId: 'r1', reward: 0 });
    assert.equal(none.finalAnswer, null);
    assert.equal(none.transcript.at(-1)?.role, 'user');
    assert.equal(digestFromSpans([], task, { rolloutId: 'r1', reward: 0 }).transcript.length, 0);
  });

  it('are bounded: long messages are cut in the middle and long conversations lose their middle turns', () => {
    const long = 'x'.repeat(10_000);
    const messages = [{ role: 'system', content: CALC_SYSTEM }, ...Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${i} ${long}` }))];
    const [s] = calculatorRollout(ref, task, { calc: '1', result: '1', answer: '1' });
    const d = digestFromSpans([{ ...s!, request: { body: { messages }, headers: {} } }], task, { rolloutId: 'r1', reward: 0 });
    assert.equal(d.transcript.length, DIGEST_LIMITS.headMessages + 1 + DIGEST_LIMITS.tailMessages);
    assert.match(d.transcript[DIGEST_LIMITS.headMessages]!.content, /19 messages omitted/);
    assert.ok(d.transcript.every((m) => m.content.length <= DIGEST_LIMITS.messageChars));
    assert.ok(d.transcript[0]!.content.startsWith('0 xxx'));
    assert.equal(truncateMiddle('short', 10), 'short');
    assert.match(truncateMiddle('a'.repeat(50) + 'b'.repeat(50), 60), /^a+\n\[… \d+ characters cut …\]\nb+$/);
  });
});
