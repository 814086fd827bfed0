import type { CallContext } from '../recording/call-context.js';

// How engines refuse a completion longer than the context leaves; each names the context and the prompt's tokens.
const REFUSALS: { re: RegExp; context: number; prompt: number }[] = [
  // Volt's model server (trainer/volt_trainer/server/engine.py).
  { re: /prompt \((\d+) tokens\) \+ max_tokens \(\d+\) exceeds the maximum model length (\d+)/, prompt: 1, context: 2 },
  // vLLM >= 0.10: "... maximum context length is L tokens and your request has N input tokens (...)".
  { re: /maximum context length is (\d+) tokens and your request has (\d+) input tokens/, context: 1, prompt: 2 },
  // Older vLLM: "... maximum context length is L tokens. However, you requested T tokens (N in the messages, ...".
  {
    re: /maximum context length is (\d+) tokens\. However, you requested \d+ tokens \((\d+) in the messages/,
    context: 1,
    prompt: 2,
  },
];

/** The context length and prompt tokens an engine's 400 names when it refused a completion too long to fit. */
export function contextRefusal(text: string): { context: number; prompt: number } | null {
  for (const { re, context, prompt } of REFUSALS) {
    const m = re.exec(text);
    if (m) return { context: Number(m[context]), prompt: Number(m[prompt]) };
  }
  return null;
}

/**
 * After the engine refused a call's completion length for its context: lowers the call's `max_tokens` to the context
 * left (context minus prompt), notes the clamp for the span and says whether to ask again. Agent CLIs ask for far more
 * than a small policy's context as a matter of course; a real API would answer them, so the gateway does too.
 */
export function clampToContext(ctx: CallContext, status: number, text: string): boolean {
  if (status !== 400) return false;
  const refusal = contextRefusal(text);
  if (!refusal) return false;
  const body = ctx.upstreamRequest;
  const param = typeof body.max_completion_tokens === 'number' ? 'max_completion_tokens' : 'max_tokens';
  const asked = body[param];
  const left = refusal.context - refusal.prompt;
  if (typeof asked !== 'number' || left < 1 || left >= asked) return false;
  body[param] = left;
  ctx.upstreamText = JSON.stringify(body);
  ctx.translation.push(
    `${param} ${asked} clamped to ${left}: the model's context (${refusal.context}) minus the prompt (${refusal.prompt})`,
  );
  return true;
}
