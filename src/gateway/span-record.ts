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

export function buildSpan(ctx: CallContext, outcome: CallOutcome): Span {
  const r = outcome.response;
  const { record } = ctx.rollout;
  const endedAt = new Date();
  const promptTokenIds = Array.isArray(r?.prompt_token_ids)
    ? r.prompt_token_ids
    : Array.isArray(r?.choices?.[0]?.prompt_token_ids)
      ? r.choices[0].prompt_token_ids
      : null;
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
    firstByteAt: outcome.firstByteAt?.toISOString() ?? null,
    endedAt: endedAt.toISOString(),
    durationMs: performance.now() - ctx.startMs,
    request: ctx.request,
    upstreamRequest: ctx.upstreamRequest,
    response: r ?? null,
    promptTokenIds,
    choices: Array.isArray(r?.choices) ? r.choices.map((c: any) => extractChoice(c, ctx.endpoint)) : [],
    usage: r?.usage ?? null,
    servedBy: parseServedBy(r, record.policyModel),
    promptOverlay: record.promptOverlay ? { version: record.promptOverlay.version } : null,
    status: outcome.error ? 'error' : 'ok',
    error: outcome.error,
  };
}

/**
 * The span as one JSON line, in the stored form (src/storage/span-codec.ts): the answer without the token ids and
 * logprobs the span already holds. The upstream request goes in as the text sent, so it is not serialised again.
 */
export function serializeSpan(span: Span, ctx: CallContext): string {
  const { upstreamRequest: _sent, response, ...rest } = span;
  const stored = compactResponse(span, response);
  const elided = stored.elided.length ? `,"elided":${JSON.stringify(stored.elided)}` : '';
  return `${JSON.stringify(rest).slice(0, -1)},"upstreamRequest":${ctx.upstreamText},"response":${JSON.stringify(stored.response)}${elided}}`;
}
