import type { Span } from '../contracts/span.js';
import type { TranscriptTurn } from './report-data.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Message content may be a string, an array of typed parts, or null next to tool calls: flatten it to text. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n');
  }
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

function messageText(m: Record<string, unknown>): string {
  const text = contentText(m.content);
  const calls = Array.isArray(m.tool_calls) && m.tool_calls.length ? `tool calls: ${JSON.stringify(m.tool_calls)}` : '';
  return [text, calls].filter(Boolean).join('\n');
}

/** A Responses API input item as a chat message: messages keep their role, tool calls and outputs are spelled out. */
function inputItemMessage(it: Record<string, unknown>): TranscriptTurn['messages'][number] {
  if (it.type === 'function_call') return { role: 'assistant', content: `tool calls: ${JSON.stringify([{ name: it.name, arguments: it.arguments }])}` };
  if (it.type === 'function_call_output') return { role: 'tool', content: contentText(it.output) };
  return { role: typeof it.role === 'string' ? it.role : '?', content: contentText(it.content) };
}

/**
 * The agent's request as chat messages, whichever API it spoke (docs/agent-apis.md): chat messages, a Messages API
 * request (its `system` field first), a Responses API request (`instructions`, then `input`); a legacy completions
 * call shows its prompt as one user message.
 */
export function requestMessages(body: unknown): TranscriptTurn['messages'] {
  if (!isRecord(body)) return [];
  if (Array.isArray(body.messages)) {
    const system = body.system !== undefined && body.system !== null ? [{ role: 'system', content: contentText(body.system) }] : [];
    return [...system, ...body.messages.filter(isRecord).map((m) => ({ role: typeof m.role === 'string' ? m.role : '?', content: messageText(m) }))];
  }
  if (body.input !== undefined) {
    const out = typeof body.instructions === 'string' && body.instructions !== '' ? [{ role: 'system', content: body.instructions }] : [];
    if (typeof body.input === 'string') return [...out, { role: 'user', content: body.input }];
    return [...out, ...(Array.isArray(body.input) ? body.input.filter(isRecord).map(inputItemMessage) : [])];
  }
  if (body.prompt !== undefined) return [{ role: 'prompt', content: contentText(body.prompt) }];
  return [];
}

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

const sameMessage = (a: TranscriptTurn['messages'][number], b: TranscriptTurn['messages'][number]) => a.role === b.role && a.content === b.content;

/**
 * Agents resend the whole conversation on every call; keep only what is new in each turn (the messages after the
 * previous request and its answer), so a transcript reads once top to bottom. `earlier` counts what was dropped.
 */
export function newMessagesOnly(turns: TranscriptTurn[]): (TranscriptTurn & { earlier: number })[] {
  return turns.map((turn, i) => {
    const prev = turns[i - 1];
    if (!prev) return { ...turn, earlier: 0 };
    const shared = prev.messages.length;
    const isContinuation = turn.messages.length > shared && prev.messages.every((m, j) => sameMessage(m, turn.messages[j]!));
    if (!isContinuation) return { ...turn, earlier: 0 };
    // The agent's copy of the previous answer comes next; it is already shown as that turn's completion.
    const skip = turn.messages[shared]?.role === 'assistant' ? shared + 1 : shared;
    return { ...turn, messages: turn.messages.slice(skip), earlier: skip };
  });
}
