/* eslint-disable @typescript-eslint/no-explicit-any -- the engine's answer is JSON of any shape; only known fields are touched */
import type { Span } from '../../src/contracts/span.js';
import { spanMeta, type CallContext, type CallOutcome } from '../../src/gateway/recording/call-context.js';
import { spanOf } from '../../src/storage/call-records.js';
import type { ElidedPath } from '../../src/storage/span-codec.js';

/**
 * The writer of the compact span form gateways stored before call records (src/storage/span-codec.ts reads it):
 * tests and benches make objects of that form with it, to check they still read as the same spans.
 */

/** The span of a call as the gateway built it on the call's path then: its meta joined with the answer. */
export function buildSpan(ctx: CallContext, outcome: CallOutcome): Span {
  return spanOf(spanMeta(ctx, outcome.firstByteAt, outcome.error), ctx.upstreamRequest, outcome.response);
}

/** The span as one compact JSON line: the answer without the ids and logprobs the span holds, `elided` naming them. */
export function serializeSpan(span: Span, sent: Pick<CallContext, 'upstreamText'>): string {
  const { upstreamRequest: _sent, response, ...rest } = span;
  const stored = compactResponse(span, response);
  const elided = stored.elided.length ? `,"elided":${JSON.stringify(stored.elided)}` : '';
  return `${JSON.stringify(rest).slice(0, -1)},"upstreamRequest":${sent.upstreamText},"response":${JSON.stringify(stored.response)}${elided}}`;
}

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
  if (Array.isArray(out.choices))
    out.choices = out.choices.map((c: any, i: number) => compactChoice(c, i, span, elided));
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
  if (
    lp &&
    numbers &&
    Array.isArray(lp.content) &&
    lp.content.length === numbers.length &&
    lp.content.every((t: any, k: number) => typeof t?.logprob === 'number' && t.logprob === numbers[k])
  ) {
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
        if (
          bytes[k++] !== (0xf0 | (c >> 18)) ||
          bytes[k++] !== (0x80 | ((c >> 12) & 0x3f)) ||
          bytes[k++] !== (0x80 | ((c >> 6) & 0x3f)) ||
          bytes[k++] !== (0x80 | (c & 0x3f))
        )
          return false;
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd;
      if (
        bytes[k++] !== (0xe0 | (c >> 12)) ||
        bytes[k++] !== (0x80 | ((c >> 6) & 0x3f)) ||
        bytes[k++] !== (0x80 | (c & 0x3f))
      )
        return false;
    }
  }
  return k === bytes.length;
}
