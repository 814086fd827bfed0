import type {
  MessageCreateParamsBase,
  MessageParam,
  ToolChoice,
  ToolUnion,
} from '@anthropic-ai/sdk/resources/messages/messages';
import type {
  ChatCompletionCreateParams,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import { z } from 'zod';
import { GatewayError } from '../routes/openai-error.js';
import { parseBody } from '../routes/request-schema.js';

const block = z.looseObject({ type: z.string() });
const textBlock = z.looseObject({ type: z.literal('text'), text: z.string() });
// Only what the translation reads is checked; the SDK's own types describe the rest.
export const messagesRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  max_tokens: z.number().int().min(1),
  messages: z
    .array(
      // `system` mid-conversation: Claude Code's beta for instructions that arrive between turns.
      z.looseObject({ role: z.enum(['user', 'assistant', 'system']), content: z.union([z.string(), z.array(block)]) }),
    )
    .min(1),
  system: z.union([z.string(), z.array(textBlock)]).nullish(),
  tools: z.array(z.looseObject({ name: z.string().min(1) })).nullish(),
  tool_choice: z
    .looseObject({
      type: z.enum(['auto', 'any', 'tool', 'none']),
      name: z.string().optional(),
      disable_parallel_tool_use: z.boolean().optional(),
    })
    .nullish(),
  stop_sequences: z.array(z.string()).max(16).nullish(),
  temperature: z.number().min(0).max(1).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  top_k: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  metadata: z.looseObject({ user_id: z.string().nullish() }).nullish(),
  thinking: z
    .looseObject({
      type: z.enum(['enabled', 'adaptive', 'disabled']),
      budget_tokens: z.number().int().min(0).optional(),
    })
    .nullish(),
  context_management: z.looseObject({ edits: z.array(z.looseObject({ type: z.string() })).optional() }).nullish(),
  output_config: z.looseObject({ effort: z.string().nullish(), format: z.unknown().optional() }).nullish(),
});

/** A message with the `system` role, which Claude Code sends mid-conversation (a beta this SDK version lacks). */
export interface SystemMessageParam {
  role: 'system';
  content: string | { type: 'text'; text: string }[];
}

/**
 * The request as agents send it. Sampling fields are gone from this SDK version's types (newer models fix them) but
 * older SDKs, agents and the API docs still send temperature, top_p and top_k, and the engine honours them.
 */
export type MessagesRequest = Omit<MessageCreateParamsBase, 'messages' | 'thinking'> & {
  messages: (MessageParam | SystemMessageParam)[];
  thinking?: { type: 'enabled' | 'adaptive' | 'disabled'; budget_tokens?: number } | null;
  context_management?: unknown;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
};

// The content blocks Volt translates, checked before translation so a bad one is named by its path.
// A Map, not an object literal: a block type such as 'constructor' must not find Object.prototype's.
const BLOCK_SCHEMAS = new Map<string, z.ZodType>(
  Object.entries({
    text: z.looseObject({ text: z.string() }),
    tool_use: z.looseObject({ id: z.string().min(1), name: z.string().min(1), input: z.unknown() }),
    thinking: z.looseObject({ thinking: z.string() }),
    redacted_thinking: z.looseObject({ data: z.string() }),
    tool_result: z.looseObject({
      tool_use_id: z.string().min(1),
      content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
      is_error: z.boolean().optional(),
    }),
  }),
);

// The message names the field too: Anthropic's error shape has no `param`.
const refuse = (param: string, message: string) =>
  new GatewayError(400, `${param}: ${message}`, { code: 'unsupported_parameter', param });

/** Validates a Messages API request and refuses what Volt cannot honour, each with the field named. */
export function parseMessagesRequest(body: unknown): MessagesRequest {
  const parsed = parseBody(messagesRequestSchema, body) as unknown as MessagesRequest;
  parsed.messages.forEach((m, i) => {
    if (typeof m.content === 'string') return;
    m.content.forEach((b, j) => {
      const param = `messages.${i}.content.${j}`;
      if (m.role === 'system' && b.type !== 'text')
        throw refuse(`${param}.type`, `system messages hold text blocks only, not '${b.type}'`);
      checkBlock(b, param);
    });
  });
  if (parsed.container != null) throw refuse('container', 'containers are not supported');
  const mcp = (parsed as { mcp_servers?: unknown }).mcp_servers;
  if (mcp != null) throw refuse('mcp_servers', 'MCP servers are not supported');
  if (parsed.output_config?.format != null)
    throw refuse('output_config.format', 'structured output formats are not supported');
  return parsed;
}

function checkBlock(b: { type: string }, param: string): void {
  const result = BLOCK_SCHEMAS.get(b.type)?.safeParse(b);
  if (!result || result.success) return;
  const issue = result.error.issues[0]!;
  const at = [param, ...issue.path].join('.');
  throw new GatewayError(400, `invalid ${at}: ${issue.message}`, { code: 'invalid_value', param: at });
}

/**
 * What the engine cannot honour but the agent may send, accepted and listed for the span (Span.translation): SmolLM2
 * and most served policies have no reasoning mode, no server-side context edits and no prompt cache to steer.
 */
export function messagesTranslationNotes(req: MessagesRequest): string[] {
  const notes: string[] = [];
  if (req.thinking != null && req.thinking.type !== 'disabled')
    notes.push(`thinking (${req.thinking.type}) dropped: the policy answers without thinking blocks`);
  if (req.context_management != null) notes.push('context_management dropped: no server-side context edits');
  if (req.output_config?.effort != null) notes.push(`output_config.effort (${req.output_config.effort}) dropped`);
  const blocks = req.messages.flatMap((m): { type: string; cache_control?: unknown }[] =>
    typeof m.content === 'string' ? [] : m.content,
  );
  const thinking = blocks.filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking').length;
  if (thinking) notes.push(`${thinking} thinking block(s) of earlier turns dropped`);
  const systemBlocks = Array.isArray(req.system) ? req.system : [];
  const tools = (req.tools ?? []) as { cache_control?: unknown }[];
  if ([...blocks, ...systemBlocks, ...tools].some((b) => (b as { cache_control?: unknown }).cache_control != null))
    notes.push('cache_control dropped: the engine caches prefixes on its own');
  return notes;
}

/** The engine's chat-completions request for a Messages API request (already parsed). Pure. */
export function messagesToChat(req: MessagesRequest): ChatCompletionCreateParams {
  const messages: ChatCompletionMessageParam[] = [];
  const system = systemText(req.system);
  if (system !== '') messages.push({ role: 'system', content: system });
  req.messages.forEach((m, i) => {
    // A system message mid-conversation stays where it was sent: a chat system message at that point.
    if (m.role === 'system') messages.push({ role: 'system', content: systemText(m.content) });
    else addMessage(messages, m, `messages.${i}`);
  });

  const chat: Record<string, unknown> & { model: string; messages: ChatCompletionMessageParam[] } = {
    model: req.model,
    messages,
    max_tokens: req.max_tokens,
  };
  if (req.tools?.length) chat.tools = req.tools.map((t, i) => chatTool(t, `tools.${i}`));
  if (req.tool_choice) {
    chat.tool_choice = chatToolChoice(req.tool_choice);
    if ('disable_parallel_tool_use' in req.tool_choice && req.tool_choice.disable_parallel_tool_use)
      chat.parallel_tool_calls = false;
  }
  if (req.stop_sequences?.length) chat.stop = req.stop_sequences;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  // vLLM's sampling extension; engines without it ignore the field, as they do for chat agents that send it.
  if (req.top_k != null) chat.top_k = req.top_k;
  if (req.stream === true) chat.stream = true;
  return chat as unknown as ChatCompletionCreateParams;
}

function systemText(system: string | { text: string }[] | null | undefined): string {
  return typeof system === 'string' ? system : (system ?? []).map((b) => b.text).join('\n');
}

function addMessage(messages: ChatCompletionMessageParam[], m: MessageParam, param: string): void {
  if (typeof m.content === 'string') {
    messages.push({ role: m.role, content: m.content });
    return;
  }
  const texts: string[] = [];
  const calls: ChatCompletionMessageFunctionToolCall[] = [];
  m.content.forEach((b, j) => {
    const at = `${param}.content.${j}`;
    if (b.type === 'text') texts.push(b.text);
    // The policy never thinks, and a thinking block's signature is Anthropic's: earlier turns' thinking is dropped.
    else if ((b.type === 'thinking' || b.type === 'redacted_thinking') && m.role === 'assistant') return;
    else if (b.type === 'tool_use' && m.role === 'assistant') {
      calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
    } else if (b.type === 'tool_result' && m.role === 'user') {
      // Results answer the calls of the turn before, so they come first, as chat tool messages.
      messages.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content, `${at}.content`) });
    } else
      throw refuse(
        `${at}.type`,
        `content blocks of type '${b.type}' are not supported in ${m.role} messages (text, tool_use, tool_result, thinking)`,
      );
  });
  if (m.role === 'assistant') {
    if (texts.length || calls.length)
      messages.push({
        role: 'assistant',
        content: texts.length ? texts.join('') : null,
        ...(calls.length ? { tool_calls: calls } : {}),
      });
  } else if (texts.length) messages.push({ role: 'user', content: texts.join('\n') });
}

function toolResultText(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[])
    .map((b, k) => {
      if (b.type === 'text' && typeof b.text === 'string') return b.text;
      throw refuse(`${param}.${k}.type`, `tool_result content of type '${b.type}' is not supported (text only)`);
    })
    .join('\n');
}

function chatTool(tool: ToolUnion, param: string): ChatCompletionFunctionTool {
  if ((tool.type ?? 'custom') !== 'custom' || !('input_schema' in tool)) {
    throw refuse(
      `${param}.type`,
      `server tool '${tool.type ?? tool.name}' is not supported (client tools with input_schema only)`,
    );
  }
  const fn: ChatCompletionFunctionTool['function'] = {
    name: tool.name,
    parameters: tool.input_schema as Record<string, unknown>,
  };
  if (tool.description != null) fn.description = tool.description;
  return { type: 'function', function: fn };
}

function chatToolChoice(choice: ToolChoice): ChatCompletionToolChoiceOption {
  if (choice.type === 'auto') return 'auto';
  if (choice.type === 'none') return 'none';
  if (choice.type === 'any') return 'required';
  if (!choice.name)
    throw new GatewayError(400, "invalid tool_choice.name: required when tool_choice.type is 'tool'", {
      code: 'invalid_value',
      param: 'tool_choice.name',
    });
  return { type: 'function', function: { name: choice.name } };
}
