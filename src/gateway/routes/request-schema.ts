import { z } from 'zod';
import { GatewayError } from './openai-error.js';

// Only the fields the gateway reads are checked; everything else passes through to the engine untouched.
const common = {
  model: z.string().min(1).max(256),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  return_token_ids: z.boolean().nullish(),
  n: z.number().int().min(1).max(16).nullish(),
};

const message = z.looseObject({ role: z.string().min(1) });

export const chatRequestSchema = z.looseObject({
  ...common,
  messages: z.array(message).min(1),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
});

export const completionRequestSchema = z.looseObject({
  ...common,
  prompt: z.union([z.string(), z.array(z.string()).min(1), z.array(z.number().int()).min(1)]),
  logprobs: z.number().int().min(0).max(20).nullish(),
});

export const rewardSchema = z.strictObject({
  value: z.number().refine(Number.isFinite, 'must be a finite number'),
  name: z.string().min(1).max(128).optional(),
  /**
   * Credit per turn: the call this reward is for, as its 0-based index among the rollout's calls (the order the
   * gateway received them). Such a reward is that turn's (batch.credit), not part of the rollout's own reward.
   */
  span: z.number().int().min(0).max(1_000_000).optional(),
});

export type ChatRequest = z.output<typeof chatRequestSchema>;
export type CompletionRequest = z.output<typeof completionRequestSchema>;

/** Parse a body or throw a 400 whose `param` names the first bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new GatewayError(400, 'request body must be a JSON object', { code: 'invalid_body' });
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = issue.path.length ? issue.path.join('.') : null;
  throw new GatewayError(400, `invalid ${param ?? 'body'}: ${issue.message}`, { code: 'invalid_value', param });
}
