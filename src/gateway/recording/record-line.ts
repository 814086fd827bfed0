import { CALL_RECORD_PREFIX, type SpanMeta } from '../../storage/call-records.js';

/**
 * What the WAL holds for one call, and what the span segments store (src/storage/call-records.ts): the span's meta,
 * the upstream request as sent, and the engine's answer as the text it arrived in (a whole JSON answer, or the data of
 * each SSE chunk), spliced in without being serialised again. That is one cheap append on the call's path; the span
 * is built from it only when it is read. Every text spliced in is one line of JSON that already parsed (`oneLine`
 * re-serialises one that is not).
 */
export type RecordedAnswer = { json: string | Buffer } | { chunks: string[] };

/**
 * The record as the pieces the WAL writes one after the other (the answer's bytes are not copied or re-encoded).
 * `requestText`: the agent's request body as the JSON text it parsed from (`meta.request.body`), spliced in rather
 * than serialised again when it is one line.
 */
export function callRecordParts(
  meta: SpanMeta,
  upstreamText: string,
  answer: RecordedAnswer,
  requestText?: string | null,
): (string | Buffer)[] {
  const head = `${CALL_RECORD_PREFIX}"meta":${metaText(meta, requestText)},"upstreamRequest":${upstreamText},`;
  if ('chunks' in answer) return [`${head}"chunks":[${answer.chunks.join(',')}]}`];
  return [`${head}"response":`, answer.json, '}'];
}

function metaText(meta: SpanMeta, requestText: string | null | undefined): string {
  if (typeof requestText !== 'string' || requestText.includes('\n') || requestText.includes('\r'))
    return JSON.stringify(meta);
  const { request, ...rest } = meta;
  // `rest` always has fields (spanId first), so its text ends with the closing brace of a non-empty object.
  return `${JSON.stringify(rest).slice(0, -1)},"request":{"body":${requestText},"headers":${JSON.stringify(request.headers)}}}`;
}

export function callRecordText(
  meta: SpanMeta,
  upstreamText: string,
  answer: RecordedAnswer,
  requestText?: string | null,
): string {
  return callRecordParts(meta, upstreamText, answer, requestText)
    .map((p) => (typeof p === 'string' ? p : p.toString('utf8')))
    .join('');
}

/** JSON `text` that parsed to `value`, as one line: as received unless it holds a line break (pretty-printed JSON). */
export function oneLine<T extends string | Buffer>(text: T, value: unknown): T | string {
  return text.includes('\n') || text.includes('\r') ? JSON.stringify(value) : text;
}
