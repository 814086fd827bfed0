/**
 * CPU per span of the upload encoder's work on one segment (src/gateway/recording/upload-encoder.ts: read the call
 * records back, join and compress them): brotli (the default) against gzip level 1 and none, on an 8-turn agent-sized
 * rollout (2,000 prompt ids, 256 tokens with logprobs; random-ish ids as test/gateway/engine-spans.ts makes them) and
 * on the gateway bench's mock answer (bench/gateway-mock-upstream.ts, which compresses far better). CPU time
 * (process.cpuUsage), median of 11 interleaved rounds, so other load on the machine matters less.
 * Run: node --import tsx bench/span-encode.ts
 */
import os from 'node:os';
import { callRecordText } from '../src/gateway/recording/record-line.js';
import { encodeSpanObject } from '../src/gateway/recording/upload-encoder.js';
import { spanMeta, type CallContext } from '../src/gateway/recording/call-context.js';
import type { Rollout } from '../src/gateway/registry/rollout-registry.js';
import type { SegmentCompression } from '../src/storage/span-compression.js';
import { recordedRollout } from '../test/gateway/engine-spans.js';
import { engineTokens, requestBody } from './gateway-sizes.js';

const ref = { runId: 'enc', iteration: 0, rolloutId: 'r', attempt: 0 };

function benchRecords(): string[] {
  const { prompt, tokens, ids, entries } = engineTokens('agent');
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
  const body = JSON.parse(requestBody('agent', false)) as Record<string, unknown>;
  const upstreamRequest = { ...body, model: 'policy', return_token_ids: true, logprobs: true };
  const rollout = {
    record: { ...ref, mode: 'train', policyModel: 'policy', sampling: null, promptOverlay: null },
    ref,
  } as unknown as Rollout;
  return Array.from({ length: 8 }, (_, seq) => {
    const ctx: CallContext = {
      rollout,
      seq,
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
    return callRecordText(spanMeta(ctx, new Date(), null), ctx.upstreamText, { json: answer });
  });
}

const sets = {
  'engine-like (8 turns)': recordedRollout(ref, { turns: 8, seed: 3, promptLen: 2000, completionLen: 256 }).map(
    (c) => c.record,
  ),
  'bench mock answer (8 calls)': benchRecords(),
};
const kinds: SegmentCompression[] = ['gzip', 'brotli', 'none'];
const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  `load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (const [name, records] of Object.entries(sets)) {
  const us: Record<string, number[]> = {};
  const bytes: Record<string, number> = {};
  for (let round = 0; round < 11; round++) {
    for (const how of round % 2 ? [...kinds].reverse() : kinds) {
      const t = cpu();
      for (let i = 0; i < 10; i++)
        bytes[how] = encodeSpanObject({
          entries: records.map((json) => ({ json })),
          segment: true,
          compression: how,
        }).body.length;
      (us[how] ??= []).push((cpu() - t) / 10 / records.length);
    }
  }
  const line = kinds
    .map((k) => `${k} ${median(us[k]!).toFixed(0)} us, ${(bytes[k]! / records.length).toFixed(0)} B`)
    .join(' | ');
  console.log(
    `${name}: per span ${line}; brotli/gzip CPU ${(median(us.brotli!) / median(us.gzip!)).toFixed(2)}x, compression alone ${((median(us.brotli!) - median(us.none!)) / (median(us.gzip!) - median(us.none!))).toFixed(2)}x`,
  );
}
console.log(
  `load average now ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
