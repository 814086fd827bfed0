/* eslint-disable @typescript-eslint/no-explicit-any -- engine JSON */
import type { RolloutRef } from '../../src/contracts/rollout.js';
import type { Span } from '../../src/contracts/span.js';
import { syntheticRollout } from '../helpers/synthetic-spans.js';
import type { Rollout } from '../../src/gateway/registry/rollout-registry.js';
import { callRecordText } from '../../src/gateway/recording/record-line.js';
import { spanMeta, type CallContext } from '../../src/gateway/recording/call-context.js';
import { spanOf } from '../../src/storage/call-records.js';

/** A chat answer shaped like vLLM's (>= 0.10.2) with return_token_ids and logprobs, as the engine sends it. */
export function engineAnswer(promptIds: number[], completionIds: number[], logprobs: number[]): any {
  const tokens = completionIds.map((id) => `t${id % 997}\u00e9`);
  return {
    id: 'chatcmpl-x',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'policy',
    system_fingerprint: 'policy@v3',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: tokens.join(''), tool_calls: [] },
        logprobs: {
          content: tokens.map((token, k) => ({
            token,
            logprob: logprobs[k],
            bytes: [...Buffer.from(token)],
            top_logprobs: [],
          })),
        },
        finish_reason: 'stop',
        stop_reason: '</calc>',
        token_ids: completionIds,
      },
    ],
    usage: {
      prompt_tokens: promptIds.length,
      completion_tokens: completionIds.length,
      total_tokens: promptIds.length + completionIds.length,
    },
    prompt_token_ids: promptIds,
  };
}

/**
 * A multi-turn rollout as the gateway records it from engine answers: each `span` as a reader builds it, and `record`
 * = the call record the gateway appends to its WAL and stores for it (the answer as the engine's JSON text).
 */
export function recordedRollout(
  ref: RolloutRef,
  o: { turns: number; seed: number; promptLen?: number; completionLen?: number },
) {
  const rollout = {
    record: { ...ref, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: null },
    ref,
  } as unknown as Rollout;
  return syntheticRollout(ref, { ...o, gapLen: 5 }).map((s) => {
    const messages = [
      { role: 'system', content: 'You are a calculator agent.' },
      { role: 'user', content: `turn ${s.seq}` },
    ];
    const upstreamRequest = { model: 'policy', messages, return_token_ids: true, logprobs: true };
    // `api` (the agent's API) spread in: CallContext gains it with the Responses/Messages routes.
    const ctx: CallContext = {
      ...{ api: 'chat.completions' as const },
      rollout,
      seq: s.seq,
      endpoint: 'chat.completions',
      stream: false,
      startedAt: new Date(s.startedAt),
      startMs: performance.now(),
      request: { body: { model: 'gpt-4o-mini', messages }, headers: { authorization: '[redacted]' } },
      upstreamRequest,
      upstreamText: JSON.stringify(upstreamRequest),
      translation: [],
      role: null,
      model: 'policy',
    };
    const c = s.choices[0]!;
    const response = engineAnswer(s.promptTokenIds!, c.tokenIds!, c.logprobs!);
    const meta = { ...spanMeta(ctx, new Date(s.startedAt), null), spanId: s.spanId };
    const span: Span = spanOf(meta, upstreamRequest, response);
    return {
      span,
      record: callRecordText(meta, ctx.upstreamText, { json: JSON.stringify(response) }),
    };
  });
}
