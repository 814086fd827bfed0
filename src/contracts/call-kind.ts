/* eslint-disable @typescript-eslint/no-explicit-any -- reads the agent's request body defensively */
import type { Span } from './span.js';

/**
 * What kind of call a span is, from the agent's request alone (the same rule in every API the agent may speak):
 * - `agent_turn`: it offers tools or carries earlier tool calls or results — a turn of the agent's loop;
 * - `structured`: no tools, but it asks for JSON output (a schema or JSON mode) — e.g. a title or a classification;
 * - `text`: neither — a plain prompt (a one-call agent's answer, or a side call such as a summary).
 */
export type CallKind = 'agent_turn' | 'structured' | 'text';
export const CALL_KINDS = ['agent_turn', 'structured', 'text'] as const satisfies readonly CallKind[];

const nonEmpty = (v: unknown) => Array.isArray(v) && v.length > 0;
const jsonFormat = (f: any) => f?.type === 'json_schema' || f?.type === 'json_object' || f?.type === 'json';

function hasToolHistory(api: Span['api'], body: any): boolean {
  switch (api) {
    case 'chat.completions':
      return (
        Array.isArray(body.messages) &&
        body.messages.some((m: any) => m?.role === 'tool' || m?.role === 'function' || nonEmpty(m?.tool_calls))
      );
    case 'responses':
      return (
        Array.isArray(body.input) &&
        body.input.some((i: any) => typeof i?.type === 'string' && /_call(_output)?$/.test(i.type))
      );
    case 'messages':
      return (
        Array.isArray(body.messages) &&
        body.messages.some(
          (m: any) =>
            Array.isArray(m?.content) &&
            m.content.some((b: any) => b?.type === 'tool_use' || b?.type === 'tool_result'),
        )
      );
    default:
      return false;
  }
}

function asksForJson(api: Span['api'], body: any): boolean {
  switch (api) {
    case 'chat.completions':
    case 'completions':
      return jsonFormat(body.response_format);
    case 'responses':
      return jsonFormat(body.text?.format);
    case 'messages':
      return jsonFormat(body.output_config?.format);
    default:
      return false;
  }
}

export function callKindOf(api: Span['api'], body: unknown): CallKind {
  if (typeof body !== 'object' || body === null) return 'text';
  const b = body as any;
  if (nonEmpty(b.tools) || nonEmpty(b.functions) || hasToolHistory(api, b)) return 'agent_turn';
  return asksForJson(api, b) ? 'structured' : 'text';
}

/** The model name the agent asked for (`model` of its request, in every API it may speak), or null. */
export function requestedModelOf(body: unknown): string | null {
  const model = typeof body === 'object' && body !== null ? (body as { model?: unknown }).model : undefined;
  return typeof model === 'string' ? model : null;
}
