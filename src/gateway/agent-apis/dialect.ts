import type { ChatCompletion, ChatCompletionChunk } from 'openai/resources/chat/completions';

/** The API an agent spoke to the gateway; the engine is always asked in chat completions (or legacy completions). */
export type AgentApi = 'chat.completions' | 'completions' | 'responses' | 'messages';

/** Translates one stream of engine chat chunks into an agent API's SSE events, as they arrive. */
export interface StreamTranslator {
  /** SSE text for one engine chunk ('' when it yields nothing yet). */
  chunk(chunk: ChatCompletionChunk): string;
  /** SSE text that ends the stream: the closing events, or the API's error event when the call failed. */
  end(error: { message: string } | null): string;
}

/** How a translated call answers its agent: the whole answer, or a stream translator. */
export interface AgentDialect {
  api: AgentApi;
  json(chat: ChatCompletion): unknown;
  stream(): StreamTranslator;
}

/** One SSE event with its `event:` line, as both the Responses and the Messages APIs send them. */
export function sseEvent(type: string, data: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
