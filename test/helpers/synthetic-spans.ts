import type { RolloutRef } from '../../src/contracts/rollout.js';
import type { Span } from '../../src/contracts/span.js';
// Synthetic data must be reproducible: the same seeded PRNG that task sampling uses.
import { seededRandom } from '../../src/workflows/sampling.js';

export interface SyntheticRolloutOptions {
  turns: number;
  seed: number;
  promptLen?: number;
  completionLen?: number;
  /** Tokens the agent adds between calls (tool results, new user turns). */
  gapLen?: number;
  /** Turn indexes whose prompt rewrites history (context trimmed): they cannot merge. */
  rewriteAt?: readonly number[];
  errorAt?: readonly number[];
  missingIdsAt?: readonly number[];
  vocab?: number;
}

/**
 * Spans as the gateway records them for a multi-turn agent: each prompt is the previous prompt + completion +
 * new tokens, except at `rewriteAt` turns. Used by tests, the sample fixture script and the batch benchmark.
 */
export function syntheticRollout(ref: RolloutRef, o: SyntheticRolloutOptions): Span[] {
  const rand = seededRandom(o.seed);
  const vocab = o.vocab ?? 49_152;
  const tok = () => Math.floor(rand() * vocab);
  const tokens = (n: number) => Array.from({ length: n }, tok);
  let context = tokens(o.promptLen ?? 32);
  const spans: Span[] = [];
  for (let seq = 0; seq < o.turns; seq++) {
    if (o.rewriteAt?.includes(seq))
      context = [context[0]!, ...tokens(4), ...context.slice(Math.min(context.length, 8))];
    const completion = tokens(o.completionLen ?? 16);
    // Rounded so fixtures stay small; the batch code copies them verbatim either way.
    const logprobs = completion.map(() => -Math.round(rand() * 4e6) / 1e6);
    const error = o.errorAt?.includes(seq) ?? false;
    const missing = o.missingIdsAt?.includes(seq) ?? false;
    const at = new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString();
    spans.push({
      spanId: `${ref.rolloutId}-a${ref.attempt}-${seq}`,
      runId: ref.runId,
      iteration: ref.iteration,
      rolloutId: ref.rolloutId,
      attempt: ref.attempt,
      seq,
      mode: 'train',
      endpoint: 'chat.completions',
      api: 'chat.completions',
      stream: false,
      startedAt: at,
      firstByteAt: at,
      endedAt: at,
      durationMs: 1,
      request: { body: { messages: [] }, headers: {} },
      requestedModel: null,
      callKind: 'text',
      role: null,
      upstreamRequest: {},
      response: {},
      promptTokenIds: missing ? null : context.slice(),
      choices: error
        ? []
        : [
            {
              index: 0,
              tokenIds: missing ? null : completion,
              logprobs: missing ? null : logprobs,
              text: `turn ${seq}`,
              finishReason: 'stop',
            },
          ],
      usage: error
        ? null
        : {
            prompt_tokens: context.length,
            completion_tokens: completion.length,
            total_tokens: context.length + completion.length,
          },
      servedBy: { model: 'policy', version: null },
      promptOverlay: null,
      translation: [],
      tokens: 'engine',
      status: error ? 'error' : 'ok',
      error: error ? { status: 502, message: 'upstream failed' } : null,
    });
    if (!error) context = [...context, ...completion, ...tokens(o.gapLen ?? 8)];
  }
  return spans;
}
