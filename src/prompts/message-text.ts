/** One message of an agent's request as text, whichever API it spoke. */
export interface TextMessage {
  role: string;
  content: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text part types of chat content (chat completions, the Messages API) and of Responses API content. */
export const CHAT_TEXT_PARTS: ReadonlySet<string> = new Set(['text']);
export const RESPONSES_TEXT_PARTS: ReadonlySet<string> = new Set(['text', 'input_text', 'output_text']);

/**
 * What the model is given: a string, or its text parts joined with nothing between them (as Volt's model server
 * renders chat content, trainer/volt_trainer/server/chat_format.py); other parts are not text to the model.
 */
export function modelText(content: unknown, textParts: ReadonlySet<string> = CHAT_TEXT_PARTS): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter(
      (p): p is { type: string; text: string } =>
        isRecord(p) && textParts.has(p.type as string) && typeof p.text === 'string',
    )
    .map((p) => p.text)
    .join('');
}

/** For people (report transcripts, optimiser digests): text parts one per line, other parts as JSON, null as ''. */
export function readableText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content))
    return content.map((p) => (isRecord(p) && typeof p.text === 'string' ? p.text : JSON.stringify(p))).join('\n');
  return content === null || content === undefined ? '' : JSON.stringify(content);
}

/** A chat message to read: its text, then any tool calls spelled out. */
function readableMessage(m: Record<string, unknown>): string {
  const text = readableText(m.content);
  const calls = Array.isArray(m.tool_calls) && m.tool_calls.length ? `tool calls: ${JSON.stringify(m.tool_calls)}` : '';
  return [text, calls].filter(Boolean).join('\n');
}

/** A Responses API input item as a chat message: messages keep their role, tool calls and outputs are spelled out. */
function readableInputItem(it: Record<string, unknown>): TextMessage {
  if (it.type === 'function_call')
    return {
      role: 'assistant',
      content: `tool calls: ${JSON.stringify([{ name: it.name, arguments: it.arguments }])}`,
    };
  if (it.type === 'function_call_output') return { role: 'tool', content: readableText(it.output) };
  return { role: typeof it.role === 'string' ? it.role : '?', content: readableText(it.content) };
}

/**
 * The agent's request as chat messages to read, whichever API it spoke (docs/agent-apis.md; the body's shape says
 * which): chat messages, a Messages API request (its `system` field first), a Responses API request (`instructions`,
 * then `input`); a legacy completions call shows its prompt as one message of role 'prompt'.
 */
export function requestMessages(body: unknown): TextMessage[] {
  if (!isRecord(body)) return [];
  if (Array.isArray(body.messages)) {
    const system =
      body.system !== undefined && body.system !== null ? [{ role: 'system', content: readableText(body.system) }] : [];
    return [
      ...system,
      ...body.messages
        .filter(isRecord)
        .map((m) => ({ role: typeof m.role === 'string' ? m.role : '?', content: readableMessage(m) })),
    ];
  }
  if (body.input !== undefined) {
    const out =
      typeof body.instructions === 'string' && body.instructions !== ''
        ? [{ role: 'system', content: body.instructions }]
        : [];
    if (typeof body.input === 'string') return [...out, { role: 'user', content: body.input }];
    return [...out, ...(Array.isArray(body.input) ? body.input.filter(isRecord).map(readableInputItem) : [])];
  }
  if (body.prompt !== undefined) return [{ role: 'prompt', content: readableText(body.prompt) }];
  return [];
}
