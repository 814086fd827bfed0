import type {
  Message,
  MessageCreateParamsBase,
  StopReason,
  TextBlock,
  ToolUseBlock,
  Usage,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatCompletion } from 'openai/resources/chat/completions';

/** Ids of one message's parts, derived from the engine's completion id so the translation stays pure. */
export function messageIds(chatId: unknown): { message: string; toolUse: (i: number) => string } {
  const base =
    typeof chatId === 'string' && chatId.startsWith('chatcmpl-') ? chatId.slice(9) : String(chatId ?? 'gateway');
  return { message: `msg_${base}`, toolUse: (i) => `toolu_${base}_${i}` };
}

/**
 * Anthropic's stop reason for a chat finish. The engine names the stop string that ended a choice in vLLM's
 * `stop_reason`; when it is one of the agent's stop_sequences the turn ended on that sequence.
 */
export function stopReason(
  finish: string | null | undefined,
  engineStop: unknown,
  req: Pick<MessageCreateParamsBase, 'stop_sequences'>,
): { stop_reason: StopReason | null; stop_sequence: string | null } {
  if (finish === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (finish === 'tool_calls') return { stop_reason: 'tool_use', stop_sequence: null };
  if (finish === 'content_filter') return { stop_reason: 'refusal', stop_sequence: null };
  if (typeof engineStop === 'string' && req.stop_sequences?.includes(engineStop))
    return { stop_reason: 'stop_sequence', stop_sequence: engineStop };
  if (finish == null) return { stop_reason: null, stop_sequence: null };
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * What the real API puts on the wire, not the SDK's read types: those mark fields the API may omit as `| null`, and
 * strict clients (the Vercel AI SDK validates `citations` as an optional array) reject a null the API never sends.
 */
export type WireUsage = Pick<
  Usage,
  | 'input_tokens'
  | 'output_tokens'
  | 'cache_creation_input_tokens'
  | 'cache_read_input_tokens'
  | 'cache_creation'
  | 'service_tier'
>;
export type WireTextBlock = Omit<TextBlock, 'citations'>;
export type WireMessage = Omit<Message, 'content' | 'usage' | 'stop_details' | 'container' | 'diagnostics'> & {
  content: (WireTextBlock | ToolUseBlock)[];
  usage: WireUsage;
};

export function messageUsage(input: number, output: number): WireUsage {
  return {
    input_tokens: input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
    output_tokens: output,
    service_tier: 'standard',
  };
}

/** A tool call's JSON arguments as a tool_use input; text that is not a JSON object is kept, not dropped. */
export function toolInput(args: string): unknown {
  try {
    const parsed: unknown = JSON.parse(args || '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed;
  } catch {
    // falls through: the model wrote arguments that are not JSON
  }
  return { _unparsed_arguments: args };
}

export function toolUseBlock(id: string, name: string, args: string): ToolUseBlock {
  return { type: 'tool_use', id, name, input: toolInput(args), caller: { type: 'direct' } };
}

/** The Messages API answer for an engine chat completion. Pure. */
export function chatToMessage(
  chat: ChatCompletion,
  req: Pick<MessageCreateParamsBase, 'model' | 'stop_sequences'>,
): WireMessage {
  const choice = chat.choices?.[0];
  const ids = messageIds(chat.id);
  const content: WireMessage['content'] = [];
  const text = choice?.message?.content ?? '';
  if (text !== '') content.push({ type: 'text', text });
  (choice?.message?.tool_calls ?? []).forEach((c, i) => {
    if (c.type === 'function')
      content.push(toolUseBlock(c.id || ids.toolUse(i), c.function.name, c.function.arguments));
  });
  const { stop_reason, stop_sequence } = stopReason(
    choice?.finish_reason,
    (choice as { stop_reason?: unknown } | undefined)?.stop_reason,
    req,
  );
  return {
    id: ids.message,
    type: 'message',
    role: 'assistant',
    model: typeof chat.model === 'string' ? chat.model : req.model,
    content,
    stop_reason,
    stop_sequence,
    usage: messageUsage(chat.usage?.prompt_tokens ?? 0, chat.usage?.completion_tokens ?? 0),
  };
}
