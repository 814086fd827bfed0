/* eslint-disable @typescript-eslint/no-explicit-any -- reads engine JSON defensively */
import type { Span, SpanChoice } from '../contracts/span.js';
import { callKindOf, requestedModelOf } from '../contracts/call-kind.js';
import { StreamAssembler } from './stream-assembler.js';

/**
 * A call record: what the gateway writes for one call, in its WAL and in the stored span objects and segments. One
 * JSON line `{"callRecord":1,"meta":{…},"upstreamRequest":<the request sent>,"response":<the
 * engine's answer as received>}` (streams: `"chunks":[<data of each SSE chunk>]`). The engine's answer is kept whole,
 * where each token id and logprob appears once; the span (the Span contract) is built from the record when it is read
 * (`spanOfCallRecord`), so the gateway never parses or re-serialises an answer to store it.
 */
export const CALL_RECORD_PREFIX = '{"callRecord":1,';

/** A stored or logged line that is a call record (the only form spans are stored in). */
export function isCallRecord(line: string): boolean {
  return line.startsWith(CALL_RECORD_PREFIX);
}

/**
 * What the gateway knows of a call without reading its answer: everything of the span but what comes from the
 * engine's answer. Taken when the call is recorded (so `endedAt` / `durationMs` are the call's) and stored in the
 * call record beside the answer's text.
 */
export type SpanMeta = Pick<
  Span,
  | 'spanId'
  | 'runId'
  | 'iteration'
  | 'rolloutId'
  | 'attempt'
  | 'seq'
  | 'mode'
  | 'endpoint'
  | 'api'
  | 'stream'
  | 'startedAt'
  | 'firstByteAt'
  | 'endedAt'
  | 'durationMs'
  | 'request'
  | 'promptOverlay'
  | 'translation'
  | 'error'
> & {
  /** Span.role; absent in records written before roles. */
  role?: string | null;
  /** servedBy's fallback when the answer names no model. */
  policyModel: string;
  /** A teacher's call: its prompt and answer in the policy's tokens (Span.tokens 'student_tokenizer'). */
  retokenized?: { promptTokenIds: number[]; completionTokenIds: number[] } | null;
};

/** A parsed call record. */
export interface CallRecord {
  meta: SpanMeta;
  upstreamRequest: unknown;
  response?: unknown;
  chunks?: unknown[];
}

/** The span of a parsed call record: a streamed answer's chunks assembled into the answer they make. */
export function spanOfCallRecord(record: CallRecord): Span {
  if (typeof record !== 'object' || record === null || typeof record.meta !== 'object' || record.meta === null) {
    throw new Error('call record: expected an object with a meta object');
  }
  let response: any = record.response ?? null;
  if (Array.isArray(record.chunks)) {
    const assembler = new StreamAssembler(record.meta.endpoint);
    for (const chunk of record.chunks) assembler.add(chunk);
    response = assembler.response();
  }
  return spanOf(record.meta, record.upstreamRequest, response);
}

/** `system_fingerprint` is "<served model name>@<version>"; without one, the model field names the policy. */
export function parseServedBy(response: any, fallbackModel: string): Span['servedBy'] {
  const fp = typeof response?.system_fingerprint === 'string' ? response.system_fingerprint : null;
  if (fp) {
    const at = fp.lastIndexOf('@');
    if (at > 0) return { model: fp.slice(0, at), version: fp.slice(at + 1) || null };
    return { model: fp, version: null };
  }
  return { model: typeof response?.model === 'string' ? response.model : fallbackModel, version: null };
}

function extractChoice(c: any, endpoint: Span['endpoint']): SpanChoice {
  const lp = c?.logprobs;
  let logprobs: number[] | null = null;
  if (lp && Array.isArray(lp.content)) logprobs = lp.content.map((t: any) => t?.logprob);
  else if (lp && Array.isArray(lp.token_logprobs)) logprobs = lp.token_logprobs;
  const text = endpoint === 'chat.completions' ? (c?.message?.content ?? '') : (c?.text ?? '');
  const choice: SpanChoice = {
    index: typeof c?.index === 'number' ? c.index : 0,
    tokenIds: Array.isArray(c?.token_ids) ? c.token_ids : null,
    logprobs,
    text: typeof text === 'string' ? text : JSON.stringify(text),
    finishReason: c?.finish_reason ?? null,
  };
  if (Array.isArray(c?.message?.tool_calls) && c.message.tool_calls.length) choice.toolCalls = c.message.tool_calls;
  return choice;
}

/** The span of a call: its meta joined with the engine's answer (ids, logprobs and text extracted from it). */
export function spanOf(meta: SpanMeta, upstreamRequest: unknown, response: any): Span {
  const r = response;
  const retokenized = meta.retokenized ?? null;
  const promptTokenIds = retokenized
    ? retokenized.promptTokenIds
    : Array.isArray(r?.prompt_token_ids)
      ? r.prompt_token_ids
      : Array.isArray(r?.choices?.[0]?.prompt_token_ids)
        ? r.choices[0].prompt_token_ids
        : null;
  const choices: SpanChoice[] = Array.isArray(r?.choices)
    ? r.choices.map((c: any) => extractChoice(c, meta.endpoint))
    : [];
  if (retokenized) {
    // A teacher's answer: the ids are the student tokenizer's (first choice only), and no logprob is the policy's.
    for (const c of choices) {
      c.tokenIds = null;
      c.logprobs = null;
    }
    const first = choices.find((c) => c.index === 0) ?? choices[0];
    if (first) first.tokenIds = retokenized.completionTokenIds;
  }
  return {
    spanId: meta.spanId,
    runId: meta.runId,
    iteration: meta.iteration,
    rolloutId: meta.rolloutId,
    attempt: meta.attempt,
    seq: meta.seq,
    mode: meta.mode,
    endpoint: meta.endpoint,
    api: meta.api,
    stream: meta.stream,
    startedAt: meta.startedAt,
    firstByteAt: meta.firstByteAt,
    endedAt: meta.endedAt,
    durationMs: meta.durationMs,
    request: meta.request,
    requestedModel: requestedModelOf(meta.request.body),
    callKind: callKindOf(meta.api, meta.request.body),
    role: meta.role ?? null,
    upstreamRequest,
    response: r ?? null,
    promptTokenIds,
    choices,
    usage: r?.usage ?? null,
    servedBy: parseServedBy(r, meta.policyModel),
    promptOverlay: meta.promptOverlay,
    translation: meta.translation,
    tokens: retokenized ? 'student_tokenizer' : 'engine',
    status: meta.error ? 'error' : 'ok',
    error: meta.error,
  };
}
