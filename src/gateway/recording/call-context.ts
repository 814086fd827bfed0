/* eslint-disable @typescript-eslint/no-explicit-any -- reads engine JSON defensively */
import { randomUUID } from 'node:crypto';
import type { Span } from '../../contracts/span.js';
import type { AgentDialect } from '../agent-apis/dialect.js';
import type { Rollout } from '../registry/rollout-registry.js';
import type { SpanMeta } from '../../storage/call-records.js';
import type { Retokenized, TeacherCall } from '../upstream/teacher.js';

/** What the gateway knows of one call while it runs: its rollout and seq, the agent's request, what went upstream. */
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
  /** `request.body` as the text the agent sent (it parsed to exactly that body), when there is one. */
  requestText?: string | null;
  upstreamRequest: Record<string, unknown>;
  /** What the gateway changed in the request beyond translating its API (Span.translation); grows as the call runs. */
  translation: string[];
  /** `upstreamRequest` as sent: serialised once, for the model server and for the span. */
  upstreamText: string;
  /** The rollout's teacher serves this call (run config `teacher`); absent: the model server. */
  teacher?: TeacherCall;
  /** The agent role the call was recognised as (run config `team`), null without one. */
  role: string | null;
  /** The model server's name for the policy serving this call: the role's, else the rollout's policyModel. */
  model: string;
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

export function spanMeta(
  ctx: CallContext,
  firstByteAt: Date | null,
  error: CallOutcome['error'],
  retokenized?: Retokenized | null,
): SpanMeta {
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
    policyModel: ctx.model,
    role: ctx.role,
    promptOverlay: record.promptOverlay ? { version: record.promptOverlay.version } : null,
    translation: ctx.translation,
    ...(retokenized && { retokenized }),
    error,
  };
}
