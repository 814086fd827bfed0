import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import { ORIGINAL_PROMPT_VARIABLE } from '../contracts/prompt-overlay.js';
import type { Span } from '../contracts/span.js';
import { modelText, RESPONSES_TEXT_PARTS } from './message-text.js';

export type OverlayText = Pick<PromptOverlay, 'mode' | 'template'>;
export type AgentApi = Span['api'];

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const SYSTEM_ROLES = new Set(['system', 'developer']);

/** Chat roles an overlay replaces or extends (OpenAI's newer models call the system message 'developer'). */
export const isSystemRole = (role: unknown): boolean => SYSTEM_ROLES.has(role as string);

/** The system prompt an overlay produces from the agent's own one ('' when it sent none). */
export function renderSystemPrompt(overlay: OverlayText, original: string): string {
  // split/join, not String.replace: a `$&` in the agent's prompt must stay literal.
  const rendered = overlay.template.split(ORIGINAL_PROMPT_VARIABLE).join(original);
  if (overlay.mode === 'replace' || original === '') return rendered;
  if (rendered === '') return original;
  return overlay.mode === 'prepend' ? `${rendered}\n\n${original}` : `${original}\n\n${rendered}`;
}

/**
 * The agent's own system prompt in a request it sent, as the gateway's overlay reads it ({{original}}): the first
 * system/developer message of the chat call the gateway makes of it (agent-apis/*-request.ts translate the Messages
 * `system` field, Responses `instructions` or system items); null when it sent none, or for a completions prompt.
 */
export function agentSystemPrompt(body: unknown, api: AgentApi): string | null {
  if (!isRecord(body)) return null;
  if (api === 'completions') return null;
  if (api === 'messages') {
    const system = Array.isArray(body.system)
      ? body.system.map((b: { text?: unknown }) => (typeof b?.text === 'string' ? b.text : '')).join('\n')
      : body.system;
    return typeof system === 'string' && system !== '' ? system : null;
  }
  if (api === 'responses') {
    if (typeof body.instructions === 'string' && body.instructions !== '') return body.instructions;
    const item = Array.isArray(body.input)
      ? body.input.find((it) => isRecord(it) && (it.type ?? 'message') === 'message' && isSystemRole(it.role))
      : undefined;
    return item ? modelText(item.content, RESPONSES_TEXT_PARTS) : null;
  }
  const message = Array.isArray(body.messages)
    ? body.messages.find((m) => isRecord(m) && isSystemRole(m.role))
    : undefined;
  return message ? modelText(message.content) : null;
}
