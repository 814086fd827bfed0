import type { Span } from '../../contracts/span.js';
import { modelText } from '../../prompts/message-text.js';
import { isSystemRole, renderSystemPrompt, type OverlayText } from '../../prompts/system-prompt.js';
import { GatewayError } from '../routes/openai-error.js';

/**
 * The request body with the overlay applied; `body` itself is never changed (the span records it as the agent
 * sent it). Chat: the first system/developer message becomes the rendered prompt, or one is inserted at index 0.
 * Completions: the rendered text and a blank line go before the prompt.
 */
export function applyPromptOverlay<T extends Record<string, unknown>>(
  body: T,
  endpoint: Span['endpoint'],
  overlay: OverlayText | null,
): T {
  if (!overlay) return body;
  if (endpoint === 'completions') return { ...body, prompt: withPrefix(body.prompt, renderSystemPrompt(overlay, '')) };
  const messages = Array.isArray(body.messages) ? (body.messages as Record<string, unknown>[]) : [];
  const at = messages.findIndex((m) => isSystemRole(m?.role));
  if (at < 0) return { ...body, messages: [{ role: 'system', content: renderSystemPrompt(overlay, '') }, ...messages] };
  const next = [...messages];
  next[at] = { ...messages[at], content: renderSystemPrompt(overlay, modelText(messages[at]!.content)) };
  return { ...body, messages: next };
}

function withPrefix(prompt: unknown, prefix: string): unknown {
  if (prefix === '') return prompt;
  if (typeof prompt === 'string') return `${prefix}\n\n${prompt}`;
  if (Array.isArray(prompt) && prompt.every((p) => typeof p === 'string'))
    return prompt.map((p: string) => `${prefix}\n\n${p}`);
  // Token-id prompts would need the policy's tokenizer here; refusing beats silently serving without the overlay.
  throw new GatewayError(400, 'this rollout runs under a prompt overlay, which needs a text prompt (got token ids)', {
    code: 'overlay_needs_text_prompt',
    param: 'prompt',
  });
}
