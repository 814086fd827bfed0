import { z } from 'zod';
import { rolloutRefSchema, type RolloutRef } from './rollout.js';
import { CALL_KINDS, type CallKind } from './call-kind.js';

/**
 * A span: one LLM call as the gateway recorded it. Written by `src/gateway`, read by `src/batches`.
 * Token ids and logprobs are the engine's own (vLLM `return_token_ids` / `logprobs`), never re-tokenized — except
 * a teacher's calls (run config `teacher`, `tokens: 'student_tokenizer'`): their text tokenized by the policy's model server.
 */
export interface SpanChoice {
  index: number;
  /** Completion token ids exactly as the engine produced them. */
  tokenIds: number[] | null;
  /** Logprob of each produced token under the serving policy, same length as tokenIds. */
  logprobs: number[] | null;
  text: string;
  finishReason: string | null;
  toolCalls?: unknown[];
}

export interface Span extends RolloutRef {
  spanId: string;
  /** 0-based sequence number of the call within its rollout attempt. */
  seq: number;
  mode: 'train' | 'eval';
  /** The engine API the call was made in; `response` and `choices` are in its shape. */
  endpoint: 'chat.completions' | 'completions';
  /** The API the agent spoke (`request.body` is in its shape). */
  api: 'chat.completions' | 'completions' | 'responses' | 'messages';
  stream: boolean;
  startedAt: string;
  firstByteAt: string | null;
  endedAt: string;
  durationMs: number;
  /** The agent's request body and headers as sent, with auth headers redacted. */
  request: { body: unknown; headers: Record<string, string> };
  /** The model name the agent asked for (its request's `model`; the engine served `servedBy`), or null. */
  requestedModel: string | null;
  /** What kind of call it was, from the request (src/contracts/call-kind.ts): agent_turn, structured or text. */
  callKind: CallKind;
  /** The agent role the gateway recognised (run config `team`); null without a team or when no role matched. */
  role: string | null;
  /** The body actually sent upstream (model rewritten, extension fields added). */
  upstreamRequest: unknown;
  /** The assembled response in the non-streaming OpenAI shape, also for streams. */
  response: unknown;
  promptTokenIds: number[] | null;
  choices: SpanChoice[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  /** Which policy served the call: base model or adapter name, and its checkpoint version. */
  servedBy: { model: string; version: string | null };
  promptOverlay: { version: number } | null;
  /**
   * What the gateway changed in the agent's request beyond translating its API, one line each: fields accepted but
   * not passed on (thinking, hosted tools, cache hints), tools renamed, `max_tokens` clamps. [] when nothing was.
   */
  translation: string[];
  /**
   * Where the token ids come from: 'engine', the policy's own sampling (ids and logprobs as produced); or
   * 'student_tokenizer', a teacher's answer tokenized with the policy's tokenizer and chat template (no logprobs),
   * usable by supervised updates only.
   */
  tokens: 'engine' | 'student_tokenizer';
  status: 'ok' | 'error';
  error: { status: number | null; message: string } | null;
}

const tokenIds = z.array(z.number().int().min(0));

export const spanChoiceSchema = z.object({
  index: z.number().int().min(0),
  tokenIds: tokenIds.nullable(),
  logprobs: z.array(z.number()).nullable(),
  text: z.string(),
  finishReason: z.string().nullable(),
  toolCalls: z.array(z.unknown()).optional(),
}) satisfies z.ZodType<SpanChoice>;

/** The stored shape of a Span (keys.span / keys.spanSegment), checked when src/storage/spans.ts reads it back. */
export const spanSchema = z.object({
  spanId: z.string().min(1),
  ...rolloutRefSchema.shape,
  seq: z.number().int().min(0),
  mode: z.enum(['train', 'eval']),
  endpoint: z.enum(['chat.completions', 'completions']),
  api: z.enum(['chat.completions', 'completions', 'responses', 'messages']),
  stream: z.boolean(),
  startedAt: z.string(),
  firstByteAt: z.string().nullable(),
  endedAt: z.string(),
  durationMs: z.number(),
  request: z.object({ body: z.unknown(), headers: z.record(z.string(), z.string()) }),
  requestedModel: z.string().nullable(),
  callKind: z.enum(CALL_KINDS),
  role: z.string().nullable().default(null),
  upstreamRequest: z.unknown(),
  response: z.unknown(),
  promptTokenIds: tokenIds.nullable(),
  choices: z.array(spanChoiceSchema),
  usage: z.object({ prompt_tokens: z.number(), completion_tokens: z.number(), total_tokens: z.number() }).nullable(),
  servedBy: z.object({ model: z.string(), version: z.string().nullable() }),
  promptOverlay: z.object({ version: z.number().int().min(0) }).nullable(),
  translation: z.array(z.string()),
  tokens: z.enum(['engine', 'student_tokenizer']).default('engine'),
  status: z.enum(['ok', 'error']),
  error: z.object({ status: z.number().nullable(), message: z.string() }).nullable(),
}) satisfies z.ZodType<Span>;
