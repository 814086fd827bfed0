import type { PromptOverlay } from '../contracts/prompt-overlay.js';
import { ORIGINAL_PROMPT_VARIABLE } from '../contracts/prompt-overlay.js';
import type { Span } from '../contracts/span.js';
import { GatewayError } from './openai-error.js';

export type OverlayText = Pick<PromptOverlay, 'mode' | 'template'>;

const SYSTEM_ROLES = new Set(['system', 'developer']);

/** The system prompt an overlay produces from the agent's own one ('' when it sent none). */
export function renderSystemPrompt(overlay: OverlayText, original: string): string {
  // split/join, not String.replace: a `$&` in the agent's prompt must stay literal.
  const rendered = overlay.template.split(ORIGINAL_PROMPT_VARIABLE).join(original);
  if (overlay.mode === 'replace' || original === '') return rendered;
  if (rendered === '') return original;
  return overlay.mode === 'prepend' ? `${rendered}\n\n${original}` : `${original}\n\n${rendered}`;
}

/** A message's text as the model server renders it: a string, or its text parts joined. */
export function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((p): p is { type: 'text'; text: string } => p?.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text)
    .join('');
}

/**
 * The request body with the overlay applied; `body` itself is never changed (the span records it as the agent
 * sent it). Chat: the first system/developer message becomes the rendered prompt, or one is inserted at index 0.
 * Completions: the rendered text and a blank line go before the prompt.
 */
export function applyPromptOverlay<T extends Record<string, unknown>>(body: T, endpoint: Span['endpoint'], overlay: OverlayText | null): T {
  if (!overlay) return body;
  if (endpoint === 'completions') return { ...body, prompt: withPrefix(body.prompt, renderSystemPrompt(overlay, '')) };
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  const at = messages.findIndex((m) => SYSTEM_ROLES.has(m?.role as string));
  if (at < 0) return { ...body, messages: [{ role: 'system', content: renderSystemPrompt(overlay, '') }, ...messages] };
  const next = [...messages];
  next[at] = { ...messages[at], content: renderSystemPrompt(overlay, messageText(messages[at]!.content)) };
  return { ...body, messages: next };
}

function withPrefix(prompt: unknown, prefix: string): unknown {
  if (prefix === '') return prompt;
  if (typeof prompt === 'string') return `${prefix}\n\n${prompt}`;
  if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'string')) return prompt.map((p: string) => `${prefix}\n\n${p}`);
  // Token-id prompts would need the policy's tokenizer here; refusing beats silently serving without the overlay.
  throw new GatewayError(400, 'this rollout runs under a prompt overlay, which needs a text prompt (got token ids)', {
    code: 'overlay_needs_text_prompt', param: 'prompt',
  });
}
