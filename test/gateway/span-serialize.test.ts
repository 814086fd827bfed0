import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Rollout } from '../../src/gateway/registry/rollout-registry.js';
import type { CallContext } from '../../src/gateway/recording/call-context.js';
import { buildSpan, serializeSpan } from '../helpers/compact-spans.js';
import { restoreSpan } from '../../src/storage/span-codec.js';
import { recordedRollout } from './engine-spans.js';

const rollout = {
  record: {
    runId: 'run-a',
    iteration: 2,
    rolloutId: 'r-1',
    attempt: 0,
    mode: 'train',
    policyModel: 'policy',
    sampling: null,
    promptOverlay: null,
  },
  ref: { runId: 'run-a', iteration: 2, rolloutId: 'r-1', attempt: 0 },
} as unknown as Rollout;

const upstreamRequest = {
  model: 'policy',
  messages: [{ role: 'user', content: 'say "hi"\n' }],
  return_token_ids: true,
  logprobs: true,
};
const ctx: CallContext = {
  rollout,
  seq: 3,
  endpoint: 'chat.completions',
  api: 'chat.completions',
  stream: false,
  startedAt: new Date(),
  startMs: performance.now(),
  request: {
    body: { model: 'gpt-4o-mini', messages: upstreamRequest.messages },
    headers: { authorization: '[redacted]' },
  },
  upstreamRequest,
  upstreamText: JSON.stringify(upstreamRequest),
};
const response = {
  id: 'x',
  object: 'chat.completion',
  model: 'policy',
  system_fingerprint: 'policy@v2',
  prompt_token_ids: [1, 2],
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: 'hi\u2028there' },
      logprobs: { content: [{ token: 'hi', logprob: -0.5 }] },
      finish_reason: 'stop',
      token_ids: [7],
    },
  ],
  usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
};

const idsIn = (line: string, id: number) => line.split(new RegExp(`[\\[,]${id}[,\\]]`)).length - 1;

void describe('serializeSpan', () => {
  void it('stores each token id and logprob once, and reads back (restoreSpan) to the span buildSpan made', () => {
    const outcome = { response, firstByteAt: new Date(), error: null };
    const span = buildSpan(ctx, outcome);
    const line = serializeSpan(span, ctx);
    assert.equal(line.includes('\n'), false, 'one line');
    assert.ok(line.includes(`"upstreamRequest":${ctx.upstreamText}`), 'the request is the exact text sent');
    const stored = JSON.parse(line) as {
      response: { prompt_token_ids?: unknown; choices: Record<string, unknown>[] };
      elided: string[];
    };
    assert.equal(stored.response.prompt_token_ids, undefined);
    assert.equal(stored.response.choices[0]!.token_ids, undefined);
    assert.deepEqual(stored.response.choices[0]!.logprobs, { content: [{ token: 'hi' }] });
    assert.deepEqual(stored.elided, ['prompt_token_ids', 'choices.0.token_ids', 'choices.0.logprobs.content.logprob']);
    assert.equal(idsIn(line, 7), 1, 'completion id 7 once');
    assert.equal(line.split('-0.5').length - 1, 1, 'its logprob once');
    assert.deepEqual(restoreSpan(stored), JSON.parse(JSON.stringify(span)));
    assert.deepEqual(response.prompt_token_ids, [1, 2], 'the answer the agent gets is left whole');
    assert.deepEqual(response.choices[0]!.logprobs.content[0], { token: 'hi', logprob: -0.5 });
  });

  void it('keeps what does not duplicate the span: a logprob entry without a number stays whole, nothing elided', () => {
    const odd = {
      ...response,
      prompt_token_ids: undefined,
      choices: [{ ...response.choices[0]!, token_ids: undefined, logprobs: { content: [{ token: 'hi' }] } }],
    };
    const outcome = { response: odd, firstByteAt: new Date(), error: null };
    const span = buildSpan(ctx, outcome);
    const stored = JSON.parse(serializeSpan(span, ctx)) as Record<string, unknown>;
    assert.equal('elided' in stored, false);
    assert.deepEqual(restoreSpan(stored), JSON.parse(JSON.stringify(span)));
  });

  void it('writes null for a call that got no answer', () => {
    const outcome = {
      response: null,
      firstByteAt: null,
      error: { status: null, message: 'upstream unreachable: ECONNREFUSED' },
    };
    const span = buildSpan(ctx, outcome);
    const parsed = JSON.parse(serializeSpan(span, ctx)) as { response: unknown; status: string };
    assert.equal(parsed.response, null);
    assert.equal(parsed.status, 'error');
  });

  void it('stores an agent-sized span in well under two thirds of its old size (2,000 prompt ids, 256 completion tokens with logprobs)', () => {
    const { span, today, stored } = recordedRollout(
      { runId: 'run-a', iteration: 0, rolloutId: 'big', attempt: 0 },
      { turns: 1, seed: 3, promptLen: 2000, completionLen: 256 },
    )[0]!;
    assert.equal(span.promptTokenIds!.length, 2000);
    assert.ok(stored.length < 0.65 * today.length, `stored ${stored.length} B vs ${today.length} B before`);
    assert.deepEqual(restoreSpan(JSON.parse(stored)), JSON.parse(today));
  });
});
