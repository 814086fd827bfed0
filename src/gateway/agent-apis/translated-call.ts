import type { IncomingHttpHeaders } from 'node:http';
import { gatewayErrors } from '../routes/openai-error.js';
import type { AgentDialect } from './dialect.js';
import { messagesToChat, messagesTranslationNotes, parseMessagesRequest } from './messages-request.js';
import { chatToMessage } from './messages-response.js';
import { MessagesStreamTranslator } from './messages-stream.js';
import { parseResponsesRequest, responsesToChat, responsesTranslationNotes } from './responses-request.js';
import { chatToResponse } from './responses-response.js';
import { ResponsesStreamTranslator } from './responses-stream.js';
import type { HostedTools } from '../../contracts/hosted-tools.js';

/** An agent's request in another API: the chat body the engine gets, and how to answer the agent. */
export interface TranslatedCall {
  chat: Record<string, unknown>;
  dialect: AgentDialect;
  /** What the engine cannot honour and the gateway dropped or changed, for the span (Span.translation). */
  translation: string[];
}

export function translateResponses(body: unknown, hosted: HostedTools = 'drop'): TranslatedCall {
  const req = parseResponsesRequest(body, hosted);
  const dialect: AgentDialect = {
    api: 'responses',
    json: (chat) => chatToResponse(chat, req),
    stream: () => new ResponsesStreamTranslator(req),
  };
  return {
    chat: responsesToChat(req) as unknown as Record<string, unknown>,
    dialect,
    translation: responsesTranslationNotes(req),
  };
}

export function translateMessages(body: unknown): TranslatedCall {
  const req = parseMessagesRequest(body);
  const dialect: AgentDialect = {
    api: 'messages',
    json: (chat) => chatToMessage(chat, req),
    stream: () => new MessagesStreamTranslator(req),
  };
  return {
    chat: messagesToChat(req) as unknown as Record<string, unknown>,
    dialect,
    translation: messagesTranslationNotes(req),
  };
}

/**
 * The URL token authorises a call; a key the SDK presents as well (`x-api-key` from the Anthropic SDKs, a bearer
 * token from the OpenAI ones) must be that same token, so a call made with some other rollout's key is refused.
 */
export function checkPresentedKey(headers: IncomingHttpHeaders, token: string): void {
  const apiKey = headers['x-api-key'];
  const bearer = /^Bearer\s+(.+)$/i.exec(headers.authorization ?? '')?.[1]?.trim();
  const presented = [typeof apiKey === 'string' ? apiKey : undefined, bearer].filter(
    (k): k is string => k !== undefined && k !== '',
  );
  if (presented.some((k) => k !== token)) throw gatewayErrors.unknownToken();
}
