/**
 * CPU time of each piece of work one agent-sized, non-streamed call costs, in one process (so a loaded machine skews
 * it less than a wall-time profile): on the event loop (the request's check, the upstream body, the answer's parse,
 * the call record's meta, the agent's stripped answer), on the span encoder's thread (the record compressed), and for
 * a reader of the store.
 * Median of 9 rounds of 200. Run: node --import tsx bench/call-costs.ts [--size agent]
 */
import os from 'node:os';
import { callRecordParts, callRecordText } from '../src/gateway/recording/record-line.js';
import { parseAnswer } from '../src/gateway/upstream/answer-parse.js';
import { stripExtensions, upstreamBody } from '../src/gateway/upstream/extensions.js';
import type { Rollout } from '../src/gateway/registry/rollout-registry.js';
import { chatRequestSchema } from '../src/gateway/routes/request-schema.js';
import { spanMeta, type CallContext } from '../src/gateway/recording/call-context.js';
import { compressSegment } from '../src/storage/span-compression.js';
import { spanOfStoredLine } from '../src/storage/spans.js';
import { CALL_SIZES, engineTokens, requestBody, type CallSize } from './gateway-sizes.js';

const size = (process.argv.includes('--size') ? process.argv[process.argv.indexOf('--size') + 1] : 'agent') as CallSize;
if (!CALL_SIZES.includes(size)) throw new Error(`--size must be one of ${CALL_SIZES.join(', ')}`);
const ref = { runId: 'costs', iteration: 0, rolloutId: 'r', attempt: 0 };
const { prompt, tokens, ids, entries } = engineTokens(size);
// The bench's mock answer (bench/gateway-mock-upstream.ts).
const answer = JSON.stringify({
  id: 'chatcmpl-bench',
  created: 1,
  model: 'policy',
  system_fingerprint: 'policy@bench',
  object: 'chat.completion',
  prompt_token_ids: prompt,
  choices: [
    {
      index: 0,
      message: { role: 'assistant', content: tokens.join('') },
      logprobs: { content: entries },
      finish_reason: 'stop',
      token_ids: ids,
    },
  ],
  usage: {
    prompt_tokens: prompt.length,
    completion_tokens: tokens.length,
    total_tokens: prompt.length + tokens.length,
  },
});
const requestText = requestBody(size, false);
const body = JSON.parse(requestText) as Record<string, unknown>;
const upstreamRequest = upstreamBody(body, 'chat.completions', 'policy');
const rollout = {
  record: { ...ref, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: null },
  ref,
} as unknown as Rollout;
const ctx: CallContext = {
  rollout,
  seq: 1,
  endpoint: 'chat.completions',
  api: 'chat.completions',
  stream: false,
  startedAt: new Date(),
  startMs: 0,
  request: { body, headers: { 'content-type': 'application/json', authorization: '[redacted]' } },
  upstreamRequest,
  upstreamText: JSON.stringify(upstreamRequest),
  translation: [],
  role: null,
  model: 'policy',
};
const meta = spanMeta(ctx, new Date(), null);
const record = callRecordText(meta, ctx.upstreamText, { json: answer });
const recordBytes = Buffer.from(`${record}\n`);
const none = { tokenIds: false, logprobs: false, usage: false };

const cases: [string, () => unknown][] = [
  ['loop: request JSON.parse', () => JSON.parse(requestText)],
  ['loop: request zod check', () => chatRequestSchema.parse(body)],
  ['loop: upstream body + stringify', () => JSON.stringify(upstreamBody(body, 'chat.completions', 'policy'))],
  ['loop: answer JSON.parse', () => JSON.parse(answer)],
  [
    'before: call record head, request serialised again',
    () => callRecordParts(spanMeta(ctx, new Date(), null), ctx.upstreamText, { json: answer }),
  ],
  [
    'loop: call record head, request text spliced',
    () => callRecordParts(spanMeta(ctx, new Date(), null), ctx.upstreamText, { json: answer }, requestText),
  ],
  [
    'before: agent answer JSON.parse + strip + stringify',
    () => JSON.stringify(stripExtensions(JSON.parse(answer), none)),
  ],
  [
    'loop: agent answer parseAnswer + strip + stringify',
    () => JSON.stringify(stripExtensions(parseAnswer(answer, { ids: true, logprobs: true }), none)),
  ],
  ['encoder: the record stored (brotli, alone)', () => compressSegment(recordBytes, 'brotli')],
  ['reader: span of a stored call record', () => spanOfStoredLine(record)],
];
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const us = new Map<string, number[]>();
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}; ${size}: request ${requestText.length} chars, answer ${answer.length}, call record ${record.length}`,
);
for (let round = 0; round < 9; round++) {
  for (const [name, f] of round % 2 ? [...cases].reverse() : cases) {
    const t = cpu();
    for (let i = 0; i < 200; i++) f();
    us.set(name, [...(us.get(name) ?? []), (cpu() - t) / 200]);
  }
}
for (const [name, xs] of us)
  console.log(
    `${name.padEnd(40)} ${[...xs]
      .sort((a, b) => a - b)[4]!
      .toFixed(1)
      .padStart(7)} µs`,
  );
console.log('(the agent answer lines include their own parse)');
