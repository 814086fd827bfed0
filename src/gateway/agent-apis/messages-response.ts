import type {
  ContentBlock,
  Message,
  MessageCreateParamsBase,
  StopReason,
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

export function messageUsage(input: number, output: number): Usage {
  return {
    input_tokens: input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: null,
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: null,
    speed: null,
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
): Message {
  const choice = chat.choices?.[0];
  const ids = messageIds(chat.id);
  const content: ContentBlock[] = [];
  const text = choice?.message?.content ?? '';
  if (text !== '') content.push({ type: 'text', text, citations: null });
  (choice?.message?.tool_calls ?? []).forEach((c, i) => {
    if (c.type === 'function')
      content.push(toolUseBlock(c.id || ids.toolUse(i), c.function.name, c.function.arguments));
  });
  const { stop_reason, stop_sequence } = stopReason(
    choice?.finish_reason,
    (choice as { stop_reason?: unknown } | undefined)?.stop_reason,
    req,
  );
  const message: Message = {
    id: ids.message,
    type: 'message',
    role: 'assistant',
    model: typeof chat.model === 'string' ? chat.model : req.model,
    content,
    stop_reason,
    stop_sequence,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage: messageUsage(chat.usage?.prompt_tokens ?? 0, chat.usage?.completion_tokens ?? 0),
  };
  return message;
}
