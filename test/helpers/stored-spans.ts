import type { Span } from '../../src/contracts/span.js';
import { spanOfCallRecord, type CallRecord, type SpanMeta } from '../../src/storage/call-records.js';

/**
 * A span as the gateway stores it: one call-record line (src/storage/call-records.ts) whose engine answer carries the
 * span's prompt ids, choices, usage and serving policy, so a reader builds the same span back (see `asStored`).
 */
export function callRecordLine(span: Span): string {
  const record = { callRecord: 1, meta: metaOf(span), upstreamRequest: span.upstreamRequest, response: answerOf(span) };
  return JSON.stringify(record);
}

/** Spans as one stored segment body: their call records, one a line. */
export const callRecordSegment = (spans: readonly Span[]): Buffer =>
  Buffer.from(spans.map((s) => `${callRecordLine(s)}\n`).join(''));

/** The span readSpans yields for `callRecordLine(span)`: the same span, with the answer its record carries. */
export const asStored = (span: Span): Span =>
  JSON.parse(JSON.stringify(spanOfCallRecord(JSON.parse(callRecordLine(span)) as CallRecord))) as Span;

function metaOf(s: Span): SpanMeta {
  return {
    spanId: s.spanId,
    runId: s.runId,
    iteration: s.iteration,
    rolloutId: s.rolloutId,
    attempt: s.attempt,
    seq: s.seq,
    mode: s.mode,
    endpoint: s.endpoint,
    api: s.api,
    stream: s.stream,
    startedAt: s.startedAt,
    firstByteAt: s.firstByteAt,
    endedAt: s.endedAt,
    durationMs: s.durationMs,
    request: s.request,
    promptOverlay: s.promptOverlay,
    translation: s.translation,
    error: s.error,
    policyModel: s.servedBy.model,
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The engine's answer (vLLM's shape, with return_token_ids and logprobs) that the span is extracted from: the span's
 * own `response`, with what the span holds (ids, logprobs, text, usage, serving policy) put in where a reader looks.
 */
function answerOf(s: Span): unknown {
  const chat = s.endpoint === 'chat.completions';
  const response = isRecord(s.response) ? s.response : {};
  const choices = Array.isArray(response.choices) ? (response.choices as unknown[]) : [];
  return {
    ...response,
    model: s.servedBy.model,
    ...(s.servedBy.version !== null && { system_fingerprint: `${s.servedBy.model}@${s.servedBy.version}` }),
    ...(s.promptTokenIds && { prompt_token_ids: s.promptTokenIds }),
    choices: s.choices.map((c, i) => ({
      ...(isRecord(choices[i]) ? choices[i] : {}),
      index: c.index,
      ...(chat
        ? { message: { role: 'assistant', content: c.text, ...(c.toolCalls && { tool_calls: c.toolCalls }) } }
        : { text: c.text }),
      ...(c.logprobs && { logprobs: { content: c.logprobs.map((logprob) => ({ logprob })) } }),
      finish_reason: c.finishReason,
      ...(c.tokenIds && { token_ids: c.tokenIds }),
    })),
    ...(s.usage && { usage: s.usage }),
  };
}
