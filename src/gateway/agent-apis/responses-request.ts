import type {
  ChatCompletionCreateParams,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type {
  ResponseCreateParams,
  ResponseIncludable,
  ResponseInputItem,
  ResponseCreateParamsBase,
} from 'openai/resources/responses/responses';
import { z } from 'zod';
import { GatewayError } from '../routes/openai-error.js';
import { parseBody } from '../routes/request-schema.js';
import type { HostedTools } from '../../contracts/hosted-tools.js';
import { engineName, engineTools } from './responses-tools.js';

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
  include: z.array(z.string()).nullish(),
  reasoning: z.looseObject({ effort: z.string().nullish(), summary: z.string().nullish() }).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string() })]).nullish(),
  text: z.looseObject({ format: z.looseObject({ type: z.string() }).nullish() }).nullish(),
  prompt_cache_key: z.string().nullish(),
  client_metadata: z.record(z.string(), z.unknown()).nullish(),
  previous_response_id: z.string().nullish(),
  truncation: z.string().nullish(),
  top_logprobs: z.number().int().min(0).nullish(),
  background: z.boolean().nullish(),
});

/**
 * Every includable of the API: logprobs Volt honours; the rest name outputs of hosted tools (dropped here) or of
 * reasoning items (never produced), so they are empty by nature.
 */
const INCLUDABLE = new Set<string>([
  'message.output_text.logprobs',
  'reasoning.encrypted_content',
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
] satisfies ResponseIncludable[]);

const text = z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]);
// The input items Volt translates, checked before translation so a bad one is named by its path.
const callId = z.string().min(1);
// Maps, not object literals: an item type such as 'constructor' must not find Object.prototype's.
const ITEM_SCHEMAS = new Map<string, z.ZodType>(
  Object.entries({
    message: z.looseObject({ role: z.enum(['user', 'assistant', 'system', 'developer']), content: text }),
    function_call: z.looseObject({
      call_id: callId,
      name: z.string().min(1),
      arguments: z.string(),
      namespace: z.string().nullish(),
    }),
    function_call_output: z.looseObject({ call_id: callId, output: text }),
    custom_tool_call: z.looseObject({
      call_id: callId,
      name: z.string().min(1),
      input: z.string(),
      namespace: z.string().nullish(),
    }),
    custom_tool_call_output: z.looseObject({ call_id: callId, output: text }),
    local_shell_call: z.looseObject({
      call_id: callId,
      action: z.looseObject({ command: z.array(z.string()) }),
    }),
    // The API names the call by `id` here; Codex sends `call_id`.
    local_shell_call_output: z.union([
      z.looseObject({ call_id: callId, output: z.string() }),
      z.looseObject({ id: callId, output: z.string() }),
    ]),
    // Reasoning the agent replays (encrypted, OpenAI's): the policy never reasons, so it is dropped.
    reasoning: z.looseObject({}),
  }),
);
const ITEM_TYPES = [...ITEM_SCHEMAS.keys()].join(', ');

const functionTool = z.looseObject({ name: z.string().min(1), parameters: z.looseObject({}).nullish() });
// The tools Volt translates, checked before translation; other types are hosted tools, dropped and recorded.
const TOOL_SCHEMAS = new Map<string, z.ZodType>(
  Object.entries({
    function: functionTool,
    custom: z.looseObject({ name: z.string().min(1) }),
    namespace: z.looseObject({
      name: z.string().min(1),
      tools: z.array(
        z.union([
          functionTool.extend({ type: z.literal('function') }),
          z.looseObject({ type: z.literal('custom'), name: z.string().min(1) }),
        ]),
      ),
    }),
  }),
);

const refuse = (param: string, message: string) =>
  new GatewayError(400, `${param}: ${message}`, { code: 'unsupported_parameter', param });

function checkItem(it: { type?: string | null }, i: number): void {
  const type = it.type ?? 'message';
  const schema = ITEM_SCHEMAS.get(type);
  if (!schema) throw refuse(`input.${i}.type`, `input items of type '${type}' are not supported (only ${ITEM_TYPES})`);
  check(schema, it, ['input', i]);
}

function check(schema: z.ZodType, value: unknown, at: (string | number)[]): void {
  const result = schema.safeParse(value);
  if (result.success) return;
  const issue = result.error.issues[0]!;
  const param = [...at, ...issue.path].join('.');
  throw new GatewayError(400, `invalid ${param}: ${issue.message}`, { code: 'invalid_value', param });
}

/**
 * Validates a Responses API request and refuses what Volt cannot honour, each with the field named; hosted tools too
 * when the run says `refuse` (agent.hostedTools).
 */
export function parseResponsesRequest(body: unknown, hosted: HostedTools = 'drop'): ResponseCreateParamsBase {
  const parsed = parseBody(responsesRequestSchema, body) as unknown as ResponseCreateParamsBase;
  if (Array.isArray(parsed.input)) parsed.input.forEach((it, i) => checkItem(it, i));
  (parsed.tools ?? []).forEach((t, i) => {
    const schema = TOOL_SCHEMAS.get(t.type);
    if (schema) check(schema, t, ['tools', i]);
  });
  if (hosted === 'refuse') engineTools(parsed.tools, hosted);
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
  if (summary != null && !['auto', 'concise', 'detailed'].includes(summary))
    throw refuse('reasoning.summary', `reasoning.summary '${summary}' is not one of auto, concise, detailed`);
  (parsed.include ?? []).forEach((inc, i) => {
    if (!INCLUDABLE.has(inc)) throw refuse(`include.${i}`, `include '${inc}' is not supported`);
  });
  return parsed;
}

/** What the engine cannot honour but the agent may send, accepted and listed for the span (Span.translation). */
export function responsesTranslationNotes(req: ResponseCreateParamsBase): string[] {
  const notes = engineTools(req.tools).notes;
  if (req.reasoning?.summary != null)
    notes.push(`reasoning.summary (${req.reasoning.summary}) dropped: the policy writes no reasoning`);
  const replayed = Array.isArray(req.input) ? req.input.filter((it) => it.type === 'reasoning').length : 0;
  if (replayed) notes.push(`${replayed} reasoning item(s) of earlier turns dropped`);
  return notes;
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
  const tools = engineTools(req.tools).chat;
  if (tools.length) chat.tools = tools;
  // Only hosted tools offered, all dropped: the engine gets neither tools nor a choice among them.
  if (req.tool_choice != null && (tools.length || !req.tools?.length))
    chat.tool_choice = chatToolChoice(req.tool_choice);
  if (req.parallel_tool_calls != null && tools.length) chat.parallel_tool_calls = req.parallel_tool_calls;
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
  if (it.type === 'function_call')
    return addCall(messages, it.call_id, engineName(it.name, it.namespace), it.arguments);
  if (it.type === 'custom_tool_call')
    return addCall(messages, it.call_id, engineName(it.name, it.namespace), JSON.stringify({ input: it.input }));
  if (it.type === 'local_shell_call') {
    const { command, working_directory, timeout_ms } = it.action;
    return addCall(messages, it.call_id, 'local_shell', JSON.stringify({ command, working_directory, timeout_ms }));
  }
  if (
    it.type === 'function_call_output' ||
    it.type === 'custom_tool_call_output' ||
    it.type === 'local_shell_call_output'
  ) {
    const output = typeof it.output === 'string' ? it.output : contentText(it.output, `${param}.output`);
    const id = 'call_id' in it && typeof it.call_id === 'string' ? it.call_id : (it as { id: string }).id;
    messages.push({ role: 'tool', tool_call_id: id, content: output });
    return;
  }
  if (it.type === 'reasoning') return;
  throw refuse(`${param}.type`, `input items of type '${type}' are not supported (only ${ITEM_TYPES})`);
}

// A message and the tool calls after it are one assistant turn in chat form.
function addCall(messages: ChatCompletionMessageParam[], id: string, name: string, args: string): void {
  const call: ChatCompletionMessageFunctionToolCall = { id, type: 'function', function: { name, arguments: args } };
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
  else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
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

function chatToolChoice(choice: NonNullable<ResponseCreateParams['tool_choice']>): ChatCompletionToolChoiceOption {
  if (typeof choice === 'string') {
    if (!['auto', 'none', 'required'].includes(choice))
      throw refuse('tool_choice', `tool_choice '${choice}' is not one of auto, none, required`);
    return choice;
  }
  if ((choice.type === 'function' || choice.type === 'custom') && 'name' in choice && typeof choice.name === 'string')
    return { type: 'function', function: { name: choice.name } };
  throw refuse('tool_choice', `tool_choice of type '${choice.type}' is not supported`);
}
