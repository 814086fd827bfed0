/**
 * A span: one LLM call as the gateway recorded it. Written by `src/gateway`, read by `src/batches`.
 * Token ids and logprobs are the engine's own (vLLM `return_token_ids` / `logprobs`), never re-tokenized.
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

export interface Span {
  spanId: string;
  runId: string;
  iteration: number;
  rolloutId: string;
  attempt: number;
  /** 0-based sequence number of the call within its rollout attempt. */
  seq: number;
  mode: 'train' | 'eval';
  endpoint: 'chat.completions' | 'completions';
  stream: boolean;
  startedAt: string;
  firstByteAt: string | null;
  endedAt: string;
  durationMs: number;
  /** The agent's request body and headers as sent, with auth headers redacted. */
  request: { body: unknown; headers: Record<string, string> };
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
  status: 'ok' | 'error';
  error: { status: number | null; message: string } | null;
}
