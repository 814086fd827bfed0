import type { Span } from '../contracts/span.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The stop string that ended a choice, from the recorded response (vLLM's `stop_reason`: a string for a stop string,
 * an int for a stop token id, null for EOS), only when the choice finished with 'stop'; null otherwise and when the
 * engine does not report it.
 */
export function stopString(span: Span, index: number): string | null {
  const response = span.response;
  if (!isRecord(response) || !Array.isArray(response.choices)) return null;
  const choice: unknown = response.choices.find((c) => isRecord(c) && (c.index ?? 0) === index);
  if (!isRecord(choice) || choice.finish_reason !== 'stop') return null;
  return typeof choice.stop_reason === 'string' && choice.stop_reason !== '' ? choice.stop_reason : null;
}

/** A choice's text as the model wrote it: the engine cuts the stop string off (`<calc>2+2` for `<calc>2+2</calc>`); put it back. */
export function completedText(span: Span, index: number): string | null {
  const choice = span.choices.find((c) => c.index === index);
  if (!choice) return null;
  const stop = stopString(span, index);
  return stop === null ? choice.text : choice.text + stop;
}

/**
 * Each successful call's first-choice text mapped to its completed text, for the calls whose stop string was cut.
 * The agent sends earlier answers back as assistant messages; this lets a transcript show them whole too.
 */
export function completedAnswers(spans: readonly Span[]): Map<string, string> {
  const completed = new Map<string, string>();
  for (const span of spans) {
    if (span.status !== 'ok') continue;
    const choice = span.choices.find((c) => c.index === 0) ?? span.choices[0];
    if (!choice) continue;
    const full = completedText(span, choice.index);
    if (full !== null && full !== choice.text) completed.set(choice.text, full);
  }
  return completed;
}
