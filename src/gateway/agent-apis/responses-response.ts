import type { ChatCompletion } from 'openai/resources/chat/completions';
import type {
  Response,
  ResponseCreateParamsBase,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseOutputText,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import { agentCallItem, engineTools, type AgentTool } from './responses-tools.js';

type ChatChoice = ChatCompletion['choices'][number];
type ChatLogprobs = NonNullable<ChatChoice['logprobs']>['content'];

/** Ids of one response's items, derived from the engine's completion id so the translation stays pure. */
export function responseIds(chatId: unknown): { response: string; message: string; call: (i: number) => string } {
  const base =
    typeof chatId === 'string' && chatId.startsWith('chatcmpl-') ? chatId.slice(9) : String(chatId ?? 'gateway');
  return { response: `resp_${base}`, message: `msg_${base}`, call: (i) => `fc_${base}_${i}` };
}

/** Responses status and incomplete reason for a chat finish_reason. */
export function responseStatus(finishReason: string | null | undefined): {
  status: 'completed' | 'incomplete';
  incomplete_details: Response['incomplete_details'];
} {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter')
    return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

export function responseUsage(usage: ChatCompletion['usage'] | null | undefined): ResponseUsage | undefined {
  if (!usage) return undefined;
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

export function outputText(
  text: string,
  logprobs: ChatLogprobs | undefined | null,
  withLogprobs: boolean,
): ResponseOutputText {
  const part: ResponseOutputText = { type: 'output_text', text, annotations: [] };
  if (withLogprobs)
    part.logprobs = (logprobs ?? []).map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes ?? [],
      top_logprobs: [],
    }));
  return part;
}

/** The output items of a chat choice: its text as one message (when there is text), then one item per tool call. */
export function outputItems(
  choice: ChatChoice | undefined,
  ids: ReturnType<typeof responseIds>,
  withLogprobs: boolean,
  tools: ReadonlyMap<string, AgentTool>,
): ResponseOutputItem[] {
  const items: ResponseOutputItem[] = [];
  const text = choice?.message?.content ?? '';
  const calls = choice?.message?.tool_calls ?? [];
  const status = responseStatus(choice?.finish_reason).status;
  if (text !== '' || !calls.length) {
    const message: ResponseOutputMessage = {
      type: 'message',
      id: ids.message,
      status,
      role: 'assistant',
      content: [outputText(text, choice?.logprobs?.content, withLogprobs)],
    };
    items.push(message);
  }
  calls.forEach((c, i) => {
    if (c.type !== 'function') return;
    const call = { id: ids.call(i), callId: c.id || ids.call(i), ...c.function };
    items.push(agentCallItem(call, tools, 'completed'));
  });
  return items;
}

/** A response object echoing the request's settings, with the given status and output. */
export function responseObject(
  req: ResponseCreateParamsBase,
  chat: { id?: unknown; created?: unknown; model?: unknown },
  output: ResponseOutputItem[],
  finish: string | null | undefined,
  usage: ResponseUsage | undefined,
): Response {
  const ids = responseIds(chat.id);
  const created = typeof chat.created === 'number' ? chat.created : 0;
  const { status, incomplete_details } = output.length
    ? responseStatus(finish)
    : { status: 'in_progress' as const, incomplete_details: null };
  const response: Response & { store: boolean } = {
    id: ids.response,
    object: 'response',
    created_at: created,
    status,
    error: null,
    incomplete_details,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    model: typeof chat.model === 'string' ? chat.model : (req.model ?? ''),
    output,
    output_text: output
      .flatMap((o) => (o.type === 'message' ? o.content.map((p) => (p.type === 'output_text' ? p.text : '')) : []))
      .join(''),
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: req.reasoning?.effort ?? null, summary: null },
    store: req.store ?? true,
    temperature: req.temperature ?? null,
    text: req.text ?? { format: { type: 'text' } },
    tool_choice: req.tool_choice ?? 'auto',
    tools: req.tools ?? [],
    top_p: req.top_p ?? null,
    truncation: 'disabled',
    metadata: req.metadata ?? {},
  };
  if (status !== 'in_progress') response.completed_at = created;
  if (usage) response.usage = usage;
  return response;
}

/** The Responses API answer for an engine chat completion. Pure. */
export function chatToResponse(chat: ChatCompletion, req: ResponseCreateParamsBase): Response {
  const choice = chat.choices?.[0];
  const withLogprobs = req.include?.includes('message.output_text.logprobs') ?? false;
  return responseObject(
    req,
    chat,
    outputItems(choice, responseIds(chat.id), withLogprobs, engineTools(req.tools).byName),
    choice?.finish_reason,
    responseUsage(chat.usage),
  );
}
