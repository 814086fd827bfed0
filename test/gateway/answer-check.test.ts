import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { checkAnswer } from '../../src/gateway/answer-check.js';
import { AnswerCache } from '../../src/gateway/answer-cache.js';
import { callRecordText, spanLineOf } from '../../src/gateway/call-record.js';
import type { Rollout } from '../../src/gateway/registry.js';
import { SpanEncoder } from '../../src/gateway/span-encoder.js';
import { spanMeta, type CallContext } from '../../src/gateway/span-record.js';
import { stripExtensions, type Asked } from '../../src/gateway/extensions.js';

const answer = {
  id: 'x', object: 'chat.completion', model: 'policy', prompt_token_ids: [1, 2],
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi\u2028"there"' }, logprobs: { content: [{ token: 'hi', logprob: -0.5, bytes: [104, 105] }] }, finish_reason: 'stop', token_ids: [7], prompt_token_ids: [1, 2] }],
  usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
};
const askings: Asked[] = [
  { tokenIds: false, logprobs: false, usage: false },
  { tokenIds: true, logprobs: false, usage: false },
  { tokenIds: false, logprobs: true, usage: false },
  { tokenIds: true, logprobs: true, usage: true },
];
// What the call's path sent and recorded when it parsed the answer on the event loop (proxy-call.ts before).
const onTheLoop = (text: string, asked: Asked) => ({
  usage: answer.usage,
  line: text.includes('\n') ? JSON.stringify(JSON.parse(text)) : null,
  agent: asked.tokenIds && asked.logprobs ? null : JSON.stringify(stripExtensions(JSON.parse(text), asked)),
});

void describe('checkAnswer', () => {
  void it('gives the agent the same stripped answer the event loop gave, and the record the same line', () => {
    for (const text of [JSON.stringify(answer), JSON.stringify(answer, null, 2)]) {
      for (const asked of askings) assert.deepEqual(checkAnswer(Buffer.from(text), asked), onTheLoop(text, asked), `${JSON.stringify(asked)} ${text.length}`);
    }
    const stripped = JSON.parse(checkAnswer(Buffer.from(JSON.stringify(answer)), askings[0]!)!.agent!);
    assert.equal(stripped.prompt_token_ids, undefined);
    assert.equal(stripped.choices[0].token_ids, undefined);
    assert.equal(stripped.choices[0].logprobs, null);
  });

  void it('leaves what is not a JSON object, or cannot be stripped, to the call path (null)', () => {
    for (const text of ['{"choices":[', 'null', '[1]', '"x"', '{"choices":[null]}', '\xff']) assert.equal(checkAnswer(Buffer.from(text), askings[0]!), null, text);
    assert.deepEqual(checkAnswer(Buffer.from('{"choices":[null]}'), askings[3]!), { usage: null, line: null, agent: null }, 'nothing to strip: fine');
  });
});

const rollout = {
  record: { runId: 'run-a', iteration: 2, rolloutId: 'r-1', attempt: 0, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: null },
  ref: { runId: 'run-a', iteration: 2, rolloutId: 'r-1', attempt: 0 },
} as unknown as Rollout;
const upstreamRequest = { model: 'policy', messages: [{ role: 'user', content: 'a "response": here' }], response: 1, return_token_ids: true, logprobs: true };
const ctx: CallContext = {
  rollout, seq: 3, endpoint: 'chat.completions', api: 'chat.completions', stream: false, startedAt: new Date(), startMs: performance.now(),
  request: { body: { model: 'm', messages: upstreamRequest.messages }, headers: {} }, upstreamRequest, upstreamText: JSON.stringify(upstreamRequest),
};
const recordOf = (text: string) => callRecordText(spanMeta(ctx, new Date(), null), ctx.upstreamText, { json: text });

void describe('AnswerCache', () => {
  void it('builds the same span line from a kept answer as from the record parsed whole, and lets it go', () => {
    const cache = new AnswerCache();
    const text = JSON.stringify({ ...answer, response: { nested: true } });
    const record = recordOf(text);
    checkAnswer(Buffer.from(text), askings[0]!, (t, p) => cache.keep(t, p));
    assert.equal(cache.size, 1);
    assert.equal(spanLineOf(record, cache), spanLineOf(record));
    assert.equal(cache.size, 0, 'taken');
    assert.equal(spanLineOf(record, cache), spanLineOf(record), 'not kept: parsed from the record');
  });

  void it('matches only a record that ends with the very answer kept; pretty-printed answers are not kept', () => {
    const cache = new AnswerCache();
    const text = JSON.stringify(answer);
    checkAnswer(Buffer.from(text), askings[0]!, (t, p) => cache.keep(t, p));
    const other = text.replace('"hi', '"ho');
    assert.equal(other.length, text.length);
    assert.equal(cache.take(recordOf(other)), null, 'same length, other answer');
    assert.equal(cache.take(`${recordOf(text).slice(0, -1)} }`), null, 'not at the end');
    checkAnswer(Buffer.from(JSON.stringify(answer, null, 1)), askings[0]!, (t, p) => cache.keep(t, p));
    assert.equal(cache.size, 1);
    const small = new AnswerCache(text.length * 2);
    for (let i = 0; i < 5; i++) small.keep(text, {});
    assert.equal(small.size, 2, 'bounded');
  });
});

void describe('SpanEncoder.check', () => {
  void it('checks on its worker thread exactly as inline, once the thread is up', async () => {
    const checker = new SpanEncoder({ worker: true });
    try {
      const bytes = Buffer.from(JSON.stringify(answer, null, 1));
      assert.ok(!(checker.check(bytes, askings[0]!) instanceof Promise), 'inline while the worker starts');
      await checker.encode({ entries: [], segment: true, compression: 'brotli' });
      let threaded: unknown = null;
      for (let i = 0; i < 600 && !(threaded instanceof Promise); i++) {
        threaded = checker.check(bytes, askings[0]!);
        if (!(threaded instanceof Promise)) await sleep(50);
      }
      assert.ok(threaded instanceof Promise, 'the worker took over');
      await threaded;
      for (const asked of askings) assert.deepEqual(await checker.check(bytes, asked), checkAnswer(bytes, asked));
      assert.equal(await checker.check(Buffer.from('{"choices":['), askings[0]!), null, 'not JSON');
      assert.deepEqual(bytes, Buffer.from(JSON.stringify(answer, null, 1)), 'the bytes are the caller\'s still');
      assert.ok(!(checker.check(bytes, askings[0]!, true) instanceof Promise), 'a lone call is checked inline');
    } finally {
      await checker.close();
    }
  });
});
