import type { Span } from '../contracts/span.js';
import { requestMessages } from '../prompts/message-text.js';
import type { TranscriptTurn } from './report-data.js';

/** One span as a chat turn: request messages, then the first choice's text (plus any tool calls it made). */
export function spanToTurn(span: Span): TranscriptTurn {
  const choice = span.choices[0];
  const calls = choice?.toolCalls?.length ? `tool calls: ${JSON.stringify(choice.toolCalls)}` : '';
  return {
    seq: span.seq,
    messages: requestMessages(span.request.body),
    completion: [choice?.text ?? '', calls].filter(Boolean).join('\n'),
    finishReason: choice?.finishReason ?? null,
    completionTokens: span.usage?.completion_tokens ?? choice?.tokenIds?.length ?? null,
    servedBy: span.servedBy.version ? `${span.servedBy.model} (${span.servedBy.version})` : span.servedBy.model,
    error: span.status === 'error' ? (span.error?.message ?? 'error') : null,
  };
}

const sameMessage = (a: TranscriptTurn['messages'][number], b: TranscriptTurn['messages'][number]) =>
  a.role === b.role && a.content === b.content;

/**
 * Agents resend the whole conversation on every call; keep only what is new in each turn (the messages after the
 * previous request and its answer), so a transcript reads once top to bottom. `earlier` counts what was dropped.
 */
export function newMessagesOnly(turns: TranscriptTurn[]): (TranscriptTurn & { earlier: number })[] {
  return turns.map((turn, i) => {
    const prev = turns[i - 1];
    if (!prev) return { ...turn, earlier: 0 };
    const shared = prev.messages.length;
    const isContinuation =
      turn.messages.length > shared && prev.messages.every((m, j) => sameMessage(m, turn.messages[j]!));
    if (!isContinuation) return { ...turn, earlier: 0 };
    // The agent's copy of the previous answer comes next; it is already shown as that turn's completion.
    const skip = turn.messages[shared]?.role === 'assistant' ? shared + 1 : shared;
    return { ...turn, messages: turn.messages.slice(skip), earlier: skip };
  });
}
