/* eslint-disable @typescript-eslint/no-explicit-any -- edits engine JSON in place */
import type { Span } from '../../contracts/span.js';

/** What the agent itself asked for; everything else the gateway added is stripped before it sees a reply. */
export interface Asked {
  tokenIds: boolean;
  logprobs: boolean;
  usage: boolean;
}

export function askedBy(body: any, endpoint: Span['endpoint']): Asked {
  const logprobs = endpoint === 'chat.completions' ? body.logprobs === true : typeof body.logprobs === 'number';
  return { tokenIds: body.return_token_ids === true, logprobs, usage: body.stream_options?.include_usage === true };
}

/** The body sent upstream: the policy model, plus the vLLM extension fields that return token ids and logprobs. */
export function upstreamBody(
  body: any,
  endpoint: Span['endpoint'],
  policyModel: string,
  sampling?: { temperature?: number; top_p?: number } | null,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body, ...sampling, model: policyModel, return_token_ids: true };
  if (endpoint === 'chat.completions') out.logprobs = true;
  // Legacy completions take a count; 0 means the sampled token's logprob only (vLLM semantics).
  else out.logprobs = typeof body.logprobs === 'number' ? body.logprobs : 0;
  if (body.stream === true) out.stream_options = { ...(body.stream_options ?? {}), include_usage: true };
  return out;
}

/** Removes the extension fields the agent did not ask for, keeping the response shape. */
export function stripExtensions(obj: any, asked: Asked): any {
  if (!asked.tokenIds && 'prompt_token_ids' in obj) delete obj.prompt_token_ids;
  if (Array.isArray(obj.choices)) {
    for (const c of obj.choices) {
      if (!asked.tokenIds) {
        delete c.token_ids;
        delete c.prompt_token_ids;
      }
      if (!asked.logprobs && c.logprobs !== undefined) c.logprobs = null;
    }
  }
  return obj;
}

/** A usage-only chunk the gateway asked for on its own (stream_options.include_usage) is dropped. */
export function isUsageOnlyChunk(chunk: any): boolean {
  return chunk.usage != null && Array.isArray(chunk.choices) && chunk.choices.length === 0;
}
