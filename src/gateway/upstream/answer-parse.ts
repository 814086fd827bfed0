/* eslint-disable @typescript-eslint/no-explicit-any -- engine JSON */
import { randomBytes } from 'node:crypto';

/*
 * The engine's answer to an agent-sized call is mostly the extension values the gateway asked for: ~2,000 prompt token
 * ids, and a logprob entry object per completion token. JSON.parse materialises all of it (the largest cost of a call
 * on the event loop), only for the agent's copy to drop it again (stripExtensions) and the record to keep the text.
 *
 * `parseAnswer` gives what JSON.parse gives, minus those values: each one the agent will not get is checked against
 * an exact grammar (a sticky regular expression: a JSON array of non-negative integers; a chat logprobs object of
 * OpenAI's and vLLM's compact shape) and replaced by a marker string before the rest is parsed. The markers must
 * come out exactly where the extension fields live (top-level `prompt_token_ids`; `token_ids`, `prompt_token_ids` and
 * `logprobs` of a choice), which proves the cut keys were those fields; else, or for any text the grammars do not
 * match (whitespace, another shape, invalid JSON), the whole text goes to JSON.parse. So the text is valid JSON
 * exactly when JSON.parse accepts it, and the result, once stripped, is the same (test/gateway/answer-parse.test.ts).
 */

const INT = String.raw`(?:0|[1-9]\d*)`;
const INTS = String.raw`\[(?:${INT}(?:,${INT})*)?\]`;
const STR = String.raw`"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"`;
const NUM = String.raw`-?${INT}(?:\.\d+)?(?:[eE][+-]?\d+)?`;
const TOP = String.raw`\{"token":${STR},"logprob":${NUM},"bytes":(?:null|${INTS})\}`;
const ENTRY = String.raw`\{"token":${STR},"logprob":${NUM},"bytes":(?:null|${INTS}),"top_logprobs":\[(?:${TOP}(?:,${TOP})*)?\]\}`;
const IDS_VALUE = new RegExp(INTS, 'y');
const LOGPROBS_VALUE = new RegExp(String.raw`\{"content":\[(?:${ENTRY}(?:,${ENTRY})*)?\](?:,"refusal":null)?\}`, 'y');

const KEYS = ['"prompt_token_ids":', '"token_ids":', '"logprobs":'] as const;
// Unique to this process, so no string of an engine's answer can pass for a marker.
const MARK = `\\u0000volt-${randomBytes(6).toString('hex')}-`;

/** Which extension values may be left unparsed: the token ids (prompt and completion), the logprobs. */
export interface Cut {
  ids: boolean;
  logprobs: boolean;
}

/**
 * The answer parsed, or undefined when it is not JSON. The values `cut` names may be markers: the caller sends either
 * the text as received or the answer after stripExtensions removed exactly those, and reads nothing else of them (the
 * usage, message and the rest are parsed as usual). Text with a line break (pretty-printed) is parsed whole, so the
 * call record can re-serialise it (oneLine).
 */
export function parseAnswer(text: string, cut: Cut): unknown {
  const cutIds = cut.ids;
  const cutLogprobs = cut.logprobs;
  if ((!cutIds && !cutLogprobs) || text.includes('\n') || text.includes('\r')) return tryParse(text);
  const pieces: string[] = [];
  let from = 0;
  let marks = 0;
  let at = 0;
  // Where each key next occurs (-1: nowhere further; a key not cut is never searched): each is searched for again
  // only once the scan has passed it, so the text is read about once per key.
  const next = KEYS.map((key) => ((key === '"logprobs":' ? cutLogprobs : cutIds) ? -2 : -1));
  for (;;) {
    const hit = nextKey(text, at, next);
    if (!hit) break;
    const value = hit.index + hit.key.length;
    at = value;
    const prev = text.charCodeAt(hit.index - 1);
    // A key's opening quote follows `{` or `,` (compact JSON); anything else is not a key of an object.
    if (prev !== 0x7b && prev !== 0x2c) continue;
    const grammar = hit.key === '"logprobs":' ? LOGPROBS_VALUE : IDS_VALUE;
    grammar.lastIndex = value;
    if (!grammar.test(text)) continue;
    pieces.push(text.slice(from, value), `"${MARK}${marks++}"`);
    from = at = grammar.lastIndex;
  }
  if (marks === 0) return tryParse(text);
  pieces.push(text.slice(from));
  const parsed = tryParse(pieces.join(''));
  if (parsed !== undefined && marksWhereExpected(parsed) === marks) return parsed;
  return tryParse(text);
}

function nextKey(text: string, at: number, next: number[]): { index: number; key: string } | null {
  let best = -1;
  for (let k = 0; k < KEYS.length; k++) {
    if (next[k] === -1) continue;
    if (next[k]! < at) next[k] = text.indexOf(KEYS[k]!, at);
    if (next[k]! >= 0 && (best < 0 || next[k]! < next[best]!)) best = k;
  }
  return best < 0 ? null : { index: next[best]!, key: KEYS[best]! };
}

const MARK_TEXT = JSON.parse(`"${MARK}"`) as string;
const isMark = (v: unknown): boolean => typeof v === 'string' && v.startsWith(MARK_TEXT);

/** How many markers sit where the extension fields live; a marker anywhere else is not counted. */
function marksWhereExpected(answer: any): number {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return -1;
  let n = isMark(answer.prompt_token_ids) ? 1 : 0;
  if (Array.isArray(answer.choices)) {
    for (const c of answer.choices) {
      if (typeof c !== 'object' || c === null) continue;
      if (isMark(c.token_ids)) n++;
      if (isMark(c.prompt_token_ids)) n++;
      if (isMark(c.logprobs)) n++;
    }
  }
  return n;
}

export function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
