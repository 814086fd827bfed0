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
// Only what the translation reads is checked; the SDK's own types describe the rest.
export const messagesRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  max_tokens: z.number().int().min(1),
  messages: z
    .array(z.looseObject({ role: z.enum(['user', 'assistant']), content: z.union([z.string(), z.array(block)]) }))
    .min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.literal('text'), text: z.string() }))]).nullish(),
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
});

/**
 * The request as agents send it. Sampling fields are gone from this SDK version's types (newer models fix them) but
 * older SDKs, agents and the API docs still send temperature, top_p and top_k, and the engine honours them.
 */
export type MessagesRequest = MessageCreateParamsBase & {
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
};

// The content blocks Volt translates, checked before translation so a bad one is named by its path.
const BLOCK_SCHEMAS: Record<string, z.ZodType> = {
  text: z.looseObject({ text: z.string() }),
  tool_use: z.looseObject({ id: z.string().min(1), name: z.string().min(1), input: z.unknown() }),
  tool_result: z.looseObject({
    tool_use_id: z.string().min(1),
    content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]).optional(),
    is_error: z.boolean().optional(),
  }),
};

// The message names the field too: Anthropic's error shape has no `param`.
const refuse = (param: string, message: string) =>
  new GatewayError(400, `${param}: ${message}`, { code: 'unsupported_parameter', param });

/** Validates a Messages API request and refuses what Volt cannot honour, each with the field named. */
export function parseMessagesRequest(body: unknown): MessagesRequest {
  const parsed = parseBody(messagesRequestSchema, body) as unknown as MessagesRequest;
  parsed.messages.forEach((m, i) => {
    if (typeof m.content !== 'string') m.content.forEach((b, j) => checkBlock(b, `messages.${i}.content.${j}`));
  });
  if (parsed.thinking != null && parsed.thinking.type !== 'disabled')
    throw refuse('thinking', 'extended thinking is not supported');
  if (parsed.container != null) throw refuse('container', 'containers are not supported');
  const mcp = (parsed as { mcp_servers?: unknown }).mcp_servers;
  if (mcp != null) throw refuse('mcp_servers', 'MCP servers are not supported');
  if (parsed.output_config?.format != null)
    throw refuse('output_config.format', 'structured output formats are not supported');
  return parsed;
}

function checkBlock(b: { type: string }, param: string): void {
  const result = BLOCK_SCHEMAS[b.type]?.safeParse(b);
  if (!result || result.success) return;
  const issue = result.error.issues[0]!;
  const at = [param, ...issue.path].join('.');
  throw new GatewayError(400, `invalid ${at}: ${issue.message}`, { code: 'invalid_value', param: at });
}

/** The engine's chat-completions request for a Messages API request (already parsed). Pure. */
export function messagesToChat(req: MessagesRequest): ChatCompletionCreateParams {
  const messages: ChatCompletionMessageParam[] = [];
  const system = typeof req.system === 'string' ? req.system : (req.system ?? []).map((b) => b.text).join('\n');
  if (system !== '') messages.push({ role: 'system', content: system });
  req.messages.forEach((m, i) => addMessage(messages, m, `messages.${i}`));

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
    else if (b.type === 'tool_use' && m.role === 'assistant') {
      calls.push({ id: b.id, type: 'function', function: { name: b.name, arguments: JSON.stringify(b.input ?? {}) } });
    } else if (b.type === 'tool_result' && m.role === 'user') {
      // Results answer the calls of the turn before, so they come first, as chat tool messages.
      messages.push({ role: 'tool', tool_call_id: b.tool_use_id, content: toolResultText(b.content, `${at}.content`) });
    } else
      throw refuse(
        `${at}.type`,
        `content blocks of type '${b.type}' are not supported in ${m.role} messages (text, tool_use, tool_result)`,
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
