import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Rollout } from '../../src/gateway/registry.js';
import { buildSpan, serializeSpan, type CallContext } from '../../src/gateway/span-record.js';

const rollout = {
  record: { runId: 'run-a', iteration: 2, rolloutId: 'r-1', attempt: 0, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: null },
  ref: { runId: 'run-a', iteration: 2, rolloutId: 'r-1', attempt: 0 },
} as unknown as Rollout;

const upstreamRequest = { model: 'policy', messages: [{ role: 'user', content: 'say "hi"\n' }], return_token_ids: true, logprobs: true };
const ctx: CallContext = {
  rollout,
  seq: 3,
  endpoint: 'chat.completions',
  api: 'chat.completions',
  stream: false,
  startedAt: new Date(),
  startMs: performance.now(),
  request: { body: { model: 'gpt-4o-mini', messages: upstreamRequest.messages }, headers: { authorization: '[redacted]' } },
  upstreamRequest,
  upstreamText: JSON.stringify(upstreamRequest),
};
const response = {
  id: 'x', object: 'chat.completion', model: 'policy', system_fingerprint: 'policy@v2', prompt_token_ids: [1, 2],
  choices: [{ index: 0, message: { role: 'assistant', content: 'hi\u2028there' }, logprobs: { content: [{ token: 'hi', logprob: -0.5 }] }, finish_reason: 'stop', token_ids: [7] }],
  usage: { prompt_tokens: 2, completion_tokens: 1, total_tokens: 3 },
};

void describe('serializeSpan', () => {
  void it('splices the request sent and the answer received in as text, and parses to the span buildSpan made', () => {
    const compact = JSON.stringify(response);
    const outcome = { response, responseText: compact, firstByteAt: new Date(), error: null };
    const span = buildSpan(ctx, outcome);
    const line = serializeSpan(span, ctx, outcome);
    assert.equal(line.includes('\n'), false, 'one line');
    assert.ok(line.includes(`"response":${compact}}`), 'the answer is the exact text received');
    assert.deepEqual(JSON.parse(line), JSON.parse(JSON.stringify(span)));
  });

  void it('re-serialises an answer that spans several lines, so the WAL keeps one span per line', () => {
    const pretty = JSON.stringify(response, null, 2);
    const outcome = { response, responseText: pretty, firstByteAt: new Date(), error: null };
    const span = buildSpan(ctx, outcome);
    const line = serializeSpan(span, ctx, outcome);
    assert.equal(line.includes('\n'), false);
    assert.deepEqual(JSON.parse(line), JSON.parse(JSON.stringify(span)));
  });

  void it('writes null for a call that got no answer', () => {
    const outcome = { response: null, firstByteAt: null, error: { status: null, message: 'upstream unreachable: ECONNREFUSED' } };
    const span = buildSpan(ctx, outcome);
    const parsed = JSON.parse(serializeSpan(span, ctx, outcome)) as { response: unknown; status: string };
    assert.equal(parsed.response, null);
    assert.equal(parsed.status, 'error');
  });
});
