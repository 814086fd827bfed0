import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scoreRollout } from '../../src/rewards/registry.js';
import { rewardSpecSchema } from '../../src/rewards/spec.js';
import { ctx, makeEvidence } from './make-evidence.js';

const task = {
  id: 't1',
  input: { question: 'What is 6 * 7?' },
  reference: { answer: 42, city: ['Paris', 'paris, france'] },
};
const score = (spec: unknown, ev = makeEvidence()) => scoreRollout(rewardSpecSchema.parse(spec), task, ev, ctx);

void describe('answer-matching rewards', () => {
  void it('numeric_match reads the output file, with a tolerance and thousands separators', async () => {
    assert.equal((await score({ kind: 'numeric_match' }, makeEvidence({ outputText: '42\n' }))).value, 1);
    assert.equal((await score({ kind: 'numeric_match' }, makeEvidence({ outputText: '42.4' }))).value, 0);
    assert.equal(
      (await score({ kind: 'numeric_match', tolerance: 0.5 }, makeEvidence({ outputText: '42.4' }))).value,
      1,
    );
    assert.equal(
      (await score({ kind: 'numeric_match' }, makeEvidence({ outputText: 'Step 1: 6 * 7 = 42, so the answer is 42' })))
        .value,
      1,
    );
    assert.equal((await score({ kind: 'numeric_match' }, makeEvidence({ outputText: '3/4' }))).value, 0);
    const big = { ...task, reference: { answer: 1234567 } };
    assert.equal(
      (
        await scoreRollout(
          rewardSpecSchema.parse({ kind: 'numeric_match' }),
          big,
          makeEvidence({ outputText: '1,234,567' }),
          ctx,
        )
      ).value,
      1,
    );
  });

  void it('numeric_match reads the last assistant message through a regex capture group', async () => {
    const ev = makeEvidence({ lastAssistantMessage: 'First 41, then... The answer is 42.', outputText: '7' });
    const r = await score(
      { kind: 'numeric_match', source: 'last_assistant_message', pattern: 'answer is (-?[\\d.]+)', weight: 2 },
      ev,
    );
    assert.deepEqual(r, { value: 2, parts: { numeric_match: 1 }, flags: [] });
  });

  void it('numeric_match partialCredit: near misses earn relative credit in training only, evaluation stays exact', async () => {
    const spec = { kind: 'numeric_match', partialCredit: 0.5 };
    const train = (text: string) => makeEvidence({ outputText: text });
    const evaluation = (text: string) => ({ ...train(text), result: { ...train(text).result, mode: 'eval' as const } });
    assert.deepEqual(await score(spec, train('42')), { value: 1, parts: { numeric_match: 1 }, flags: [] });
    assert.deepEqual(await score(spec, train('21')), {
      value: 0.25,
      parts: { numeric_match: 0, near_miss: 0.25 },
      flags: ['near_miss'],
    });
    assert.equal((await score(spec, train('63'))).value, 0.25);
    assert.deepEqual(await score(spec, train('100')), {
      value: 0,
      parts: { numeric_match: 0, near_miss: 0 },
      flags: [],
    });
    assert.deepEqual(await score(spec, evaluation('21')), { value: 0, parts: { numeric_match: 0 }, flags: [] });
    assert.equal((await score(spec, evaluation('42'))).value, 1);
    assert.equal((await score({ kind: 'numeric_match' }, train('21'))).value, 0);
    assert.throws(() => rewardSpecSchema.parse({ kind: 'numeric_match', partialCredit: 1 }), /partialCredit/);
  });

  void it('flags a missing or unparseable answer instead of guessing', async () => {
    assert.deepEqual((await score({ kind: 'numeric_match' })).flags, ['no_answer']);
    assert.deepEqual((await score({ kind: 'numeric_match' }, makeEvidence({ outputText: 'forty-two' }))).flags, [
      'unparseable_answer',
    ]);
    assert.deepEqual(
      (await score({ kind: 'numeric_match', pattern: 'ANSWER: (\\d+)' }, makeEvidence({ outputText: '42' }))).flags,
      ['no_answer'],
    );
  });

  void it('string_match: normalised accepts case/space/punctuation variants and any listed answer; exact does not', async () => {
    const s = { kind: 'string_match', referenceKey: 'city' };
    assert.equal((await score(s, makeEvidence({ outputText: '  PARIS. ' }))).value, 1);
    assert.equal((await score(s, makeEvidence({ outputText: 'Paris,   France' }))).value, 1);
    assert.equal((await score(s, makeEvidence({ outputText: 'Lyon' }))).value, 0);
    assert.equal((await score({ ...s, mode: 'exact' }, makeEvidence({ outputText: 'PARIS' }))).value, 0);
    assert.equal((await score({ ...s, mode: 'exact' }, makeEvidence({ outputText: 'Paris\n' }))).value, 1);
  });

  void it('a task without the reference field is a clear error naming it', async () => {
    await assert.rejects(
      scoreRollout(
        rewardSpecSchema.parse({ kind: 'string_match' }),
        { id: 't9', input: {} },
        makeEvidence({ outputText: 'x' }),
        ctx,
      ),
      /task t9: reference.answer is missing/,
    );
  });

  void it('agent_emitted aggregates what the agent posted, filtered by name', async () => {
    const ev = makeEvidence({
      agentRewards: [{ name: 'tests', value: 0.2 }, { value: 5 }, { name: 'tests', value: 0.8 }],
    });
    assert.equal((await score({ kind: 'agent_emitted', name: 'tests' }, ev)).value, 0.8);
    assert.equal((await score({ kind: 'agent_emitted', name: 'tests', aggregate: 'mean' }, ev)).value, 0.5);
    assert.equal((await score({ kind: 'agent_emitted', aggregate: 'max' }, ev)).value, 5);
    // A reward posted for one call (span) is that turn's (credit per turn), not the rollout's.
    const turn = makeEvidence({ agentRewards: [{ value: 1 }, { value: 9, span: 2 }] });
    assert.equal((await score({ kind: 'agent_emitted', aggregate: 'sum' }, turn)).value, 1);
    assert.deepEqual(await score({ kind: 'agent_emitted', missingValue: -1 }), {
      value: -1,
      parts: { agent_emitted: -1 },
      flags: ['no_agent_reward'],
    });
  });

  void it('weighted_sum adds weighted parts and subtracts per-token and per-turn penalties', async () => {
    const ev = makeEvidence({ outputText: '42', agentRewards: [{ value: 0.5 }], completionTokens: 200, turns: 4 });
    const r = await score(
      {
        kind: 'weighted_sum',
        parts: { correct: { kind: 'numeric_match', weight: 1 }, self: { kind: 'agent_emitted', weight: 0.5 } },
        penalties: { perCompletionToken: 0.001, perTurn: 0.05 },
      },
      ev,
    );
    assert.deepEqual(r.parts, { correct: 1, self: 0.25, 'penalty.completion_tokens': -0.2, 'penalty.turns': -0.2 });
    assert.ok(Math.abs(r.value - 0.85) < 1e-12);
  });

  void it('reward specs reject bad fields naming their path', () => {
    const r = rewardSpecSchema.safeParse({
      kind: 'weighted_sum',
      parts: { a: { kind: 'numeric_match', tolerance: -1 } },
    });
    assert.equal(r.success, false);
    assert.deepEqual(
      r.error!.issues.map((i) => i.path.join('.')),
      ['parts.a.tolerance'],
    );
    assert.equal(
      rewardSpecSchema
        .safeParse({ kind: 'llm_judge', baseUrl: 'not a url', model: 'm', rubric: 'r' })
        .error!.issues[0]!.path.join('.'),
      'baseUrl',
    );
    assert.equal(rewardSpecSchema.safeParse({ kind: 'nope' }).success, false);
    const badRegex = rewardSpecSchema.safeParse({ kind: 'command', command: ['true'], passPattern: '(unclosed' });
    assert.deepEqual(
      badRegex.error!.issues.map((i) => [i.path.join('.'), i.message]),
      [['passPattern', 'not a valid regular expression']],
    );
  });
});
