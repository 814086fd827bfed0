/**
 * CPU per agent-sized call (2,000 prompt ids, 256 tokens with logprobs) of parsing the engine's answer, building the
 * span and serialising it: the compact stored form against the form before (answer spliced in as received).
 * Median of 21 interleaved rounds of CPU time (process.cpuUsage), so other load on the machine matters less.
 * Run: node --import tsx bench/span-serialize.ts
 */
import { buildSpan, serializeSpan } from '../src/gateway/span-record.js';
import { engineTokens } from './gateway-sizes.js';
const { prompt, tokens, ids, entries } = engineTokens('agent');
const text = JSON.stringify({ id: 'x', object: 'chat.completion', created: 1, model: 'policy', system_fingerprint: 'policy@b', prompt_token_ids: prompt, choices: [{ index: 0, message: { role: 'assistant', content: tokens.join('') }, logprobs: { content: entries }, finish_reason: 'stop', token_ids: ids }], usage: { prompt_tokens: 2000, completion_tokens: 256, total_tokens: 2256 } });
const up = { model: 'policy', messages: [{ role: 'system', content: 'x'.repeat(5800) }] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a minimal rollout and context, only the fields buildSpan reads
const rollout: any = { record: { runId: 'r', iteration: 0, rolloutId: 'x', attempt: 0, mode: 'train', policyModel: 'p', promptOverlay: null }, ref: {} };
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as above
const ctx: any = { rollout, seq: 0, endpoint: 'chat.completions', stream: false, startedAt: new Date(), startMs: 0, request: { body: up, headers: {} }, upstreamRequest: up, upstreamText: JSON.stringify(up) };
// serializeSpan before compact spans: the answer spliced in as the text received.
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a Span
const oldSer = (span: any) => { const { upstreamRequest: _u, response: _r, ...rest } = span; return `${JSON.stringify(rest).slice(0, -1)},"upstreamRequest":${ctx.upstreamText},"response":${text}}`; };
const N = 300;
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const A: number[] = [], B: number[] = [], C: number[] = [];
for (let round = 0; round < 21; round++) {
  let t = cpu(); for (let i = 0; i < N; i++) { const r = JSON.parse(text); oldSer(buildSpan(ctx, { response: r, firstByteAt: null, error: null })); } A.push((cpu() - t) / N);
  t = cpu(); for (let i = 0; i < N; i++) { const r = JSON.parse(text); serializeSpan(buildSpan(ctx, { response: r, firstByteAt: null, error: null }), ctx); } B.push((cpu() - t) / N);
  t = cpu(); for (let i = 0; i < N; i++) { JSON.parse(text); } C.push((cpu() - t) / N);
}
const med = (x: number[]) => x.sort((a, b) => a - b)[10]!;
console.log(`CPU per call, median of 21 interleaved rounds: JSON.parse of the answer alone ${(med(C) * 1000).toFixed(0)} us; parse+buildSpan+serialize: main ${(med(A) * 1000).toFixed(0)} us, compact ${(med(B) * 1000).toFixed(0)} us (ratio ${(med(B) / med(A)).toFixed(2)})`);
