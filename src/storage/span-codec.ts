/* eslint-disable @typescript-eslint/no-explicit-any -- the engine's answer is JSON of any shape; only known fields are touched */
import type { Span } from '../contracts/span.js';

/**
 * The compact span form gateways stored before call records (call-records.ts; still read). The engine's answer (`response`) repeats what the span already holds as
 * `promptTokenIds` and `choices[i].tokenIds` / `logprobs` (vLLM's `prompt_token_ids`, per-choice `token_ids`, each
 * token's `logprob`, and each token's `bytes`, the UTF-8 of its `token`); storing them twice doubled a span. A stored span therefore carries its answer with those
 * copies removed and `elided` naming what was removed; reading puts them back, so a reader sees the answer the
 * engine sent. Spans stored before this (no `elided`) read unchanged. Segment objects may be compressed (span-compression.ts).
 */
export type ElidedPath =
  | 'prompt_token_ids'
  | `choices.${number}.prompt_token_ids`
  | `choices.${number}.token_ids`
  | `choices.${number}.logprobs.content.logprob`
  | `choices.${number}.logprobs.content.bytes`
  | `choices.${number}.logprobs.token_logprobs`;

const sameIds = (a: unknown, b: readonly number[] | null): boolean =>
  Array.isArray(a) && b !== null && (a === b || (a.length === b.length && a.every((x, i) => x === b[i])));

/** The answer as stored, without mutating `response` (the agent still gets it): copies only what it changes. */
export function compactResponse(span: Span, response: any): { response: unknown; elided: ElidedPath[] } {
  const elided: ElidedPath[] = [];
  if (typeof response !== 'object' || response === null || Array.isArray(response)) return { response, elided };
  const out: any = { ...response };
  if (sameIds(out.prompt_token_ids, span.promptTokenIds)) {
    delete out.prompt_token_ids;
    elided.push('prompt_token_ids');
  }
  if (Array.isArray(out.choices)) out.choices = out.choices.map((c: any, i: number) => compactChoice(c, i, span, elided));
  return { response: out, elided };
}

function compactChoice(c: any, i: number, span: Span, elided: ElidedPath[]): any {
  const mine = span.choices[i];
  if (typeof c !== 'object' || c === null || !mine) return c;
  const out: any = { ...c };
  if (sameIds(out.prompt_token_ids, span.promptTokenIds)) {
    delete out.prompt_token_ids;
    elided.push(`choices.${i}.prompt_token_ids`);
  }
  if (sameIds(out.token_ids, mine.tokenIds)) {
    delete out.token_ids;
    elided.push(`choices.${i}.token_ids`);
  }
  const lp = out.logprobs;
  const numbers = mine.logprobs;
  if (lp && numbers && Array.isArray(lp.content) && lp.content.length === numbers.length && lp.content.every((t: any, k: number) => typeof t?.logprob === 'number' && t.logprob === numbers[k])) {
    const bytes = lp.content.every(utf8Bytes);
    out.logprobs = { ...lp, content: lp.content.map((t: any) => without(t, bytes)) };
    elided.push(`choices.${i}.logprobs.content.logprob`);
    if (bytes) elided.push(`choices.${i}.logprobs.content.bytes`);
  } else if (lp && numbers && Array.isArray(lp.token_logprobs) && sameIds(lp.token_logprobs, numbers)) {
    const { token_logprobs: _dup, ...rest } = lp;
    out.logprobs = rest;
    elided.push(`choices.${i}.logprobs.token_logprobs`);
  }
  return out;
}

// A plain copy loop: object rest spread is several times slower in V8 on the call's path (256 entries a call).
function without(t: any, bytes: boolean): any {
  const out: any = {};
  for (const k in t) if (k !== 'logprob' && !(bytes && k === 'bytes')) out[k] = t[k];
  return out;
}

/**
 * A token's `bytes` that are exactly the UTF-8 of its `token` (not so for a token that splits a character). Compared
 * code point by code point as Buffer.from(token) would encode it (a lone surrogate as U+FFFD), allocating nothing:
 * encoding each non-ASCII token into a Buffer was the largest part of building a span of such tokens.
 */
export function utf8Bytes(t: any): boolean {
  const { bytes, token } = t ?? {};
  if (!Array.isArray(bytes) || typeof token !== 'string') return false;
  let k = 0;
  for (let i = 0; i < token.length; i++) {
    let c = token.charCodeAt(i);
    if (c < 0x80) {
      if (bytes[k++] !== c) return false;
    } else if (c < 0x800) {
      if (bytes[k++] !== (0xc0 | (c >> 6)) || bytes[k++] !== (0x80 | (c & 0x3f))) return false;
    } else {
      const next = token.charCodeAt(i + 1);
      if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        if (bytes[k++] !== (0xf0 | (c >> 18)) || bytes[k++] !== (0x80 | ((c >> 12) & 0x3f)) || bytes[k++] !== (0x80 | ((c >> 6) & 0x3f)) || bytes[k++] !== (0x80 | (c & 0x3f))) return false;
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (bytes[k++] !== (0xe0 | (c >> 12)) || bytes[k++] !== (0x80 | ((c >> 6) & 0x3f)) || bytes[k++] !== (0x80 | (c & 0x3f))) return false;
    }
  }
  return k === bytes.length;
}

const ELIDED = /^(?:prompt_token_ids|choices\.(\d+)\.(prompt_token_ids|token_ids|logprobs\.content\.logprob|logprobs\.content\.bytes|logprobs\.token_logprobs))$/;

/**
 * Puts back what `compactResponse` removed, in place, on a parsed stored record; returns the record without
 * `elided`. Throws with the bad path when `elided` does not fit the record (a corrupt or foreign object).
 */
export function restoreSpan(value: any): unknown {
  if (typeof value !== 'object' || value === null || !('elided' in value)) return value;
  const { elided, ...span } = value;
  if (!Array.isArray(elided)) throw new Error('elided: expected an array of paths');
  const response = span.response;
  if (elided.length > 0 && (typeof response !== 'object' || response === null)) throw new Error('elided: the span has no response object');
  for (const path of elided) {
    const m = typeof path === 'string' ? ELIDED.exec(path) : null;
    if (!m) throw new Error(`elided: unknown path ${JSON.stringify(path)}`);
    if (!m[1]) {
      response.prompt_token_ids = span.promptTokenIds;
      continue;
    }
    const i = Number(m[1]);
    const choice = response?.choices?.[i];
    const mine = span.choices?.[i];
    if (!choice || !mine) throw new Error(`elided: ${path} names a choice the span does not have`);
    if (m[2] === 'prompt_token_ids') choice.prompt_token_ids = span.promptTokenIds;
    else if (m[2] === 'token_ids') choice.token_ids = mine.tokenIds;
    else if (m[2] === 'logprobs.token_logprobs') choice.logprobs.token_logprobs = mine.logprobs;
    else if (m[2] === 'logprobs.content.bytes') restoreBytes(choice, path);
    else {
      const content = choice.logprobs?.content;
      if (!Array.isArray(content) || !Array.isArray(mine.logprobs) || content.length !== mine.logprobs.length) throw new Error(`elided: ${path} does not match choices.${i}.logprobs`);
      // Back after `token`, where OpenAI and vLLM put it, so the object reads as the engine wrote it.
      choice.logprobs.content = content.map((t: any, k: number) => ('token' in t ? { token: t.token, logprob: mine.logprobs[k], ...t } : { ...t, logprob: mine.logprobs[k] }));
    }
  }
  return span;
}

// Back after `logprob`, where OpenAI and vLLM put it; runs after the logprob restore (elided lists it first).
function restoreBytes(choice: any, path: string): void {
  const content = choice.logprobs?.content;
  if (!Array.isArray(content) || !content.every((t: any) => typeof t?.token === 'string')) throw new Error(`elided: ${path} needs a token string in every entry`);
  choice.logprobs.content = content.map(({ token, logprob, ...rest }: any) => ({ token, logprob, bytes: [...Buffer.from(token, 'utf8')], ...rest }));
}
