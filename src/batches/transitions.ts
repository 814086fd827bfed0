import type { Span } from '../contracts/span.js';

/** One LLM call as training data: the engine's own prompt ids, completion ids and their logprobs (choice 0). */
export interface Transition {
  spanId: string;
  seq: number;
  promptIds: number[];
  completionIds: number[];
  logprobs: number[];
}

export type BreakReason = 'prefix_mismatch' | 'error_span' | 'missing_token_ids';

/** Why a span is not a transition; such spans are excluded and counted, never re-tokenized. */
export type SpanExclusion = Exclude<BreakReason, 'prefix_mismatch'>;

/**
 * The span's transition, or why it cannot be one (unusable engine token data counts as missing). A teacher's span
 * (`tokens: 'student_tokenizer'`) has ids but no policy logprobs: `supervised` updates take it (its logprobs read 0,
 * which the SFT objective never uses); a policy-gradient update cannot, so there it counts as missing_token_ids.
 */
export function toTransition(span: Span, supervised = false): Transition | SpanExclusion {
  if (span.status !== 'ok') return 'error_span';
  const choice = span.choices.find((c) => c.index === 0) ?? span.choices[0];
  const promptIds = span.promptTokenIds;
  const completionIds = choice?.tokenIds;
  const teacher = span.tokens === 'student_tokenizer';
  if (teacher && !supervised) return 'missing_token_ids';
  const logprobs = teacher && completionIds ? new Array<number>(completionIds.length).fill(0) : choice?.logprobs;
  if (!promptIds || promptIds.length === 0 || !completionIds || !logprobs || logprobs.length !== completionIds.length) {
    return 'missing_token_ids';
  }
  // A NaN or positive logprob (or a non-integer id) would make the whole batch fail the trainer's schema check.
  for (let i = 0; i < completionIds.length; i++) {
    const id = completionIds[i]!;
    const lp = logprobs[i]!;
    if (!Number.isInteger(id) || id < 0 || !(lp <= 0) || !Number.isFinite(lp)) return 'missing_token_ids';
  }
  return { spanId: span.spanId, seq: span.seq, promptIds, completionIds, logprobs };
}
