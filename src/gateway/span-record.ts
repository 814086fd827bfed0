/* eslint-disable @typescript-eslint/no-explicit-any -- reads engine JSON defensively */
import { randomUUID } from 'node:crypto';
import type { Span, SpanChoice } from '../contracts/span.js';
import type { AgentDialect } from './agent-apis/dialect.js';
import type { Rollout } from './registry.js';
import { compactResponse } from '../storage/span-codec.js';

export interface CallContext {
  rollout: Rollout;
  seq: number;
  /** Replicas: the seq being claimed in the object store while the call runs upstream; recording waits for it. */
  seqClaim?: Promise<number>;
  endpoint: Span['endpoint'];
  /** The API the agent spoke; `dialect` answers it when that is not the engine's own (endpoint). */
  api: NonNullable<Span['api']>;
  dialect?: AgentDialect;
  stream: boolean;
  startedAt: Date;
  startMs: number;
  request: Span['request'];
  upstreamRequest: unknown;
  /** `upstreamRequest` as sent: serialised once, for the model server and for the span. */
  upstreamText: string;
}

export interface CallOutcome {
  response: any;
  firstByteAt: Date | null;
  error: { status: number | null; message: string } | null;
}

const REDACTED = new Set(['authorization', 'api-key', 'x-api-key', 'cookie', 'proxy-authorization', 'set-cookie']);

/** Request headers as stored in a span: auth-bearing ones replaced, so no token or key reaches the store. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined) continue;
    out[k] = REDACTED.has(k.toLowerCase()) ? '[redacted]' : Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
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

/**
 * What the gateway knows of a call without reading its answer: everything of the span but what comes from the
 * engine's answer. Taken when the call is recorded (so `endedAt` / `durationMs` are the call's), stored in the WAL
 * beside the answer's text (call-record.ts), and joined with the parsed answer later, off the call's path.
 */
export type SpanMeta = Pick<
  Span,
  | 'spanId' | 'runId' | 'iteration' | 'rolloutId' | 'attempt' | 'seq' | 'mode' | 'endpoint' | 'stream'
  | 'startedAt' | 'firstByteAt' | 'endedAt' | 'durationMs' | 'request' | 'promptOverlay' | 'error'
> & {
  api: NonNullable<Span['api']>;
  /** servedBy's fallback when the answer names no model. */
  policyModel: string;
};

export function spanMeta(ctx: CallContext, firstByteAt: Date | null, error: CallOutcome['error']): SpanMeta {
  const { record } = ctx.rollout;
  const endedAt = new Date();
  return {
    spanId: randomUUID(),
    runId: record.runId,
    iteration: record.iteration,
    rolloutId: record.rolloutId,
    attempt: record.attempt,
    seq: ctx.seq,
    mode: record.mode,
    endpoint: ctx.endpoint,
    api: ctx.api,
    stream: ctx.stream,
    startedAt: ctx.startedAt.toISOString(),
    firstByteAt: firstByteAt?.toISOString() ?? null,
    endedAt: endedAt.toISOString(),
    durationMs: performance.now() - ctx.startMs,
    request: ctx.request,
    policyModel: record.policyModel,
    promptOverlay: record.promptOverlay ? { version: record.promptOverlay.version } : null,
    error,
  };
}

/** The span of a call: its meta joined with the engine's answer (ids, logprobs and text extracted from it). */
export function spanOf(meta: SpanMeta, upstreamRequest: unknown, response: any): Span {
  const r = response;
  const promptTokenIds = Array.isArray(r?.prompt_token_ids)
    ? r.prompt_token_ids
    : Array.isArray(r?.choices?.[0]?.prompt_token_ids)
      ? r.choices[0].prompt_token_ids
      : null;
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
    upstreamRequest,
    response: r ?? null,
    promptTokenIds,
    choices: Array.isArray(r?.choices) ? r.choices.map((c: any) => extractChoice(c, meta.endpoint)) : [],
    usage: r?.usage ?? null,
    servedBy: parseServedBy(r, meta.policyModel),
    promptOverlay: meta.promptOverlay,
    status: meta.error ? 'error' : 'ok',
    error: meta.error,
  };
}

export function buildSpan(ctx: CallContext, outcome: CallOutcome): Span {
  return spanOf(spanMeta(ctx, outcome.firstByteAt, outcome.error), ctx.upstreamRequest, outcome.response);
}

/**
 * The span as one JSON line, in the stored form (src/storage/span-codec.ts): the answer without the token ids and
 * logprobs the span already holds. The upstream request goes in as the text sent, so it is not serialised again.
 */
export function serializeSpan(span: Span, sent: Pick<CallContext, 'upstreamText'>): string {
  const { upstreamRequest: _sent, response, ...rest } = span;
  const stored = compactResponse(span, response);
  const elided = stored.elided.length ? `,"elided":${JSON.stringify(stored.elided)}` : '';
  return `${JSON.stringify(rest).slice(0, -1)},"upstreamRequest":${sent.upstreamText},"response":${JSON.stringify(stored.response)}${elided}}`;
}
