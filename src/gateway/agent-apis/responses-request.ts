import type {
  ChatCompletionCreateParams,
  ChatCompletionFunctionTool,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  ResponseCreateParams,
  ResponseInputItem,
  Tool,
  ResponseCreateParamsBase,
} from 'openai/resources/responses/responses';
import { z } from 'zod';
import { GatewayError } from '../routes/openai-error.js';
import { parseBody } from '../routes/request-schema.js';

// Only what the translation reads is checked; the SDK's own types describe the rest.
const item = z.looseObject({ type: z.string().optional() });
export const responsesRequestSchema = z.looseObject({
  model: z.string().min(1).max(256),
  input: z.union([z.string(), z.array(item)]),
  instructions: z.string().nullish(),
  tools: z.array(z.looseObject({ type: z.string() })).nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
});

/** Includables Volt can honour (logprobs) or that are empty by nature here (no reasoning items are ever produced). */
const INCLUDABLE = new Set(['message.output_text.logprobs', 'reasoning.encrypted_content']);

const text = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);
// The input items Volt translates, checked before translation so a bad one is named by its path.
const ITEM_SCHEMAS: Record<string, z.ZodType> = {
  message: z.looseObject({ role: z.enum(['user', 'assistant', 'system', 'developer']), content: text }),
  function_call: z.looseObject({ call_id: z.string().min(1), name: z.string().min(1), arguments: z.string() }),
  function_call_output: z.looseObject({ call_id: z.string().min(1), output: text }),
};

const refuse = (param: string, message: string) =>
  new GatewayError(400, `${param}: ${message}`, { code: 'unsupported_parameter', param });

function checkItem(it: { type?: string | null }, i: number): void {
  const type = it.type ?? 'message';
  const schema = ITEM_SCHEMAS[type];
  if (!schema)
    throw refuse(
      `input.${i}.type`,
      `input items of type '${type}' are not supported (only messages, function_call and function_call_output)`,
    );
  const result = schema.safeParse(it);
  if (result.success) return;
  const issue = result.error.issues[0]!;
  const param = ['input', i, ...issue.path].join('.');
  throw new GatewayError(400, `invalid ${param}: ${issue.message}`, { code: 'invalid_value', param });
}

/** Validates a Responses API request and refuses what Volt cannot honour, each with the field named. */
export function parseResponsesRequest(body: unknown): ResponseCreateParamsBase {
  const parsed = parseBody(responsesRequestSchema, body) as unknown as ResponseCreateParamsBase;
  if (Array.isArray(parsed.input)) parsed.input.forEach((it, i) => checkItem(it, i));
  if (parsed.previous_response_id != null) {
    throw refuse(
      'previous_response_id',
      'previous_response_id is not supported by this gateway: send the whole conversation in `input` (store is not retrievable)',
    );
  }
  if (parsed.conversation != null)
    throw refuse('conversation', 'conversation objects are not supported: send the whole conversation in `input`');
  if (parsed.background === true) throw refuse('background', 'background mode is not supported');
  if (parsed.prompt != null) throw refuse('prompt', 'stored prompt templates are not supported');
  if (parsed.truncation === 'auto') throw refuse('truncation', "truncation 'auto' is not supported (only 'disabled')");
  if (parsed.context_management != null) throw refuse('context_management', 'context_management is not supported');
  if (parsed.top_logprobs != null && parsed.top_logprobs > 0)
    throw refuse('top_logprobs', 'top_logprobs is not supported');
  const maxToolCalls = (parsed as { max_tool_calls?: unknown }).max_tool_calls;
  if (maxToolCalls != null) throw refuse('max_tool_calls', 'max_tool_calls is not supported');
  const summary = parsed.reasoning?.summary;
  if (summary != null && summary !== 'auto')
    throw refuse('reasoning.summary', `reasoning summaries ('${summary}') are not supported`);
  (parsed.include ?? []).forEach((inc, i) => {
    if (!INCLUDABLE.has(inc)) throw refuse(`include.${i}`, `include '${inc}' is not supported`);
  });
  return parsed;
}

/** The engine's chat-completions request for a Responses API request (already parsed). Pure. */
export function responsesToChat(req: ResponseCreateParamsBase): ChatCompletionCreateParams {
  const messages: ChatCompletionMessageParam[] = [];
  if (req.instructions) messages.push({ role: 'system', content: req.instructions });
  if (typeof req.input === 'string') messages.push({ role: 'user', content: req.input });
  else (req.input ?? []).forEach((it, i) => addInputItem(messages, it, `input.${i}`));
  if (!messages.length)
    throw new GatewayError(400, 'input must hold at least one message', { code: 'invalid_value', param: 'input' });

  const chat: Record<string, unknown> & { model: string; messages: ChatCompletionMessageParam[] } = {
    model: req.model ?? '',
    messages,
  };
  if (req.tools?.length) chat.tools = req.tools.map((t, i) => chatTool(t, `tools.${i}`));
  if (req.tool_choice != null) chat.tool_choice = chatToolChoice(req.tool_choice);
  if (req.parallel_tool_calls != null && req.tools?.length) chat.parallel_tool_calls = req.parallel_tool_calls;
  if (req.max_output_tokens != null) chat.max_tokens = req.max_output_tokens;
  if (req.temperature != null) chat.temperature = req.temperature;
  if (req.top_p != null) chat.top_p = req.top_p;
  if (req.reasoning?.effort != null) chat.reasoning_effort = req.reasoning.effort;
  const format = req.text?.format;
  if (format?.type === 'json_schema') {
    chat.response_format = {
      type: 'json_schema',
      json_schema: {
        name: format.name,
        schema: format.schema,
        strict: format.strict ?? null,
        description: format.description,
      },
    };
  } else if (format?.type === 'json_object') chat.response_format = { type: 'json_object' };
  if (req.stream === true) chat.stream = true;
  return chat as unknown as ChatCompletionCreateParams;
}

function addInputItem(messages: ChatCompletionMessageParam[], it: ResponseInputItem, param: string): void {
  const type = it.type ?? 'message';
  if (type === 'message' && 'role' in it && 'content' in it) {
    const content = contentText(it.content, `${param}.content`);
    if (it.role === 'assistant') messages.push({ role: 'assistant', content });
    else messages.push({ role: it.role, content } as ChatCompletionMessageParam);
    return;
  }
  if (it.type === 'function_call') {
    const call: ChatCompletionMessageFunctionToolCall = {
      id: it.call_id,
      type: 'function',
      function: { name: it.name, arguments: it.arguments },
    };
    const last = messages[messages.length - 1];
    // A message and the function calls after it are one assistant turn in chat form.
    if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    return;
  }
  if (it.type === 'function_call_output') {
    const output = typeof it.output === 'string' ? it.output : contentText(it.output, `${param}.output`);
    messages.push({ role: 'tool', tool_call_id: it.call_id, content: output });
    return;
  }
  throw refuse(
    `${param}.type`,
    `input items of type '${type}' are not supported (only messages, function_call and function_call_output)`,
  );
}

function contentText(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content))
    throw new GatewayError(400, `invalid ${param}: expected a string or a list of content parts`, {
      code: 'invalid_value',
      param,
    });
  return content
    .map((part: { type?: string; text?: unknown }, j) => {
      if (
        (part?.type === 'input_text' || part?.type === 'output_text' || part?.type === 'text') &&
        typeof part.text === 'string'
      )
        return part.text;
      if (part?.type === 'refusal') return String((part as { refusal?: unknown }).refusal ?? '');
      throw refuse(`${param}.${j}.type`, `content parts of type '${String(part?.type)}' are not supported (text only)`);
    })
    .join('');
}

function chatTool(tool: Tool, param: string): ChatCompletionFunctionTool {
  if (tool.type !== 'function')
    throw refuse(`${param}.type`, `hosted tool '${tool.type}' is not supported (function tools only)`);
  const fn: ChatCompletionFunctionTool['function'] = {
    name: tool.name,
    parameters: tool.parameters ?? { type: 'object', properties: {} },
  };
  if (tool.description != null) fn.description = tool.description;
  if (tool.strict != null) fn.strict = tool.strict;
  return { type: 'function', function: fn };
}

function chatToolChoice(choice: NonNullable<ResponseCreateParams['tool_choice']>): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') return choice;
  if (choice.type === 'function' && 'name' in choice) return { type: 'function', function: { name: choice.name } };
  throw refuse('tool_choice', `tool_choice of type '${choice.type}' is not supported`);
}
