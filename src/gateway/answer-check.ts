import { oneLine } from './call-record.js';
import { stripExtensions, type Asked } from './extensions.js';

/** What a non-streamed call needs of the engine's JSON answer, read once (answer-checker.ts: off the event loop). */
export interface CheckedAnswer {
  /** The answer's usage, for the budget and the token counters. */
  usage: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  /** The answer for the call record when it is not the bytes received: pretty-printed JSON, re-serialised as one line. */
  line: string | null;
  /** The agent's answer, the extension fields it did not ask for stripped; null: the bytes received go out as they are. */
  agent: string | null;
}

/**
 * Parses the answer (only JSON that parsed may enter the WAL) and builds what the agent gets. null when it is not a
 * JSON object: the call's path then handles it as before (error answers, odd engines), on the event loop.
 */
export function checkAnswer(bytes: Uint8Array, asked: Asked, keep?: (text: string, parsed: unknown) => void): CheckedAnswer | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const text = buf.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return null;
  // Before stripping, which edits the parsed answer in place.
  const one = oneLine(buf, json);
  const line = typeof one === 'string' ? one : null;
  const usage = ((json as { usage?: unknown }).usage ?? null) as CheckedAnswer['usage'];
  let agent: string | null = null;
  try {
    // Fastify's reply.send(object) is JSON.stringify too: the agent gets the same bytes as when this ran on the loop.
    if (!(asked.tokenIds && asked.logprobs)) agent = JSON.stringify(stripExtensions(keep ? shallowCopy(json) : json, asked));
  } catch {
    // A shape the stripping cannot take (a null choice): the call's path records it and fails as it did before.
    return null;
  }
  // Kept whole for the span (answer-cache.ts) when the record holds the bytes received.
  if (keep && line === null) keep(text, json);
  return { usage: typeof usage === 'object' ? usage : null, line, agent };
}

/** What stripExtensions edits (the answer and its choices), copied, so the parsed answer stays whole. */
function shallowCopy(json: object): object {
  const { choices } = json as { choices?: unknown };
  if (!Array.isArray(choices)) return { ...json };
  return { ...json, choices: choices.map((c: unknown) => (typeof c === 'object' && c !== null ? { ...c } : c)) };
}
