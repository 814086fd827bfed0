import { CALL_RECORD_PREFIX, type SpanMeta } from '../storage/call-records.js';

/**
 * What the WAL holds for one call, and what the span segments store (src/storage/call-records.ts): the span's meta,
 * the upstream request as sent, and the engine's answer as the text it arrived in (a whole JSON answer, or the data of
 * each SSE chunk), spliced in without being serialised again. That is one cheap append on the call's path; the span
 * is built from it only when it is read. Every text spliced in is one line of JSON that already parsed (`oneLine`
 * re-serialises one that is not).
 */
export type RecordedAnswer = { json: string | Buffer } | { chunks: string[] };

/** The record as the pieces the WAL writes one after the other (the answer's bytes are not copied or re-encoded). */
export function callRecordParts(meta: SpanMeta, upstreamText: string, answer: RecordedAnswer): (string | Buffer)[] {
  const head = `${CALL_RECORD_PREFIX}"meta":${JSON.stringify(meta)},"upstreamRequest":${upstreamText},`;
  if ('chunks' in answer) return [`${head}"chunks":[${answer.chunks.join(',')}]}`];
  return [`${head}"response":`, answer.json, '}'];
}

export function callRecordText(meta: SpanMeta, upstreamText: string, answer: RecordedAnswer): string {
  return callRecordParts(meta, upstreamText, answer).map((p) => (typeof p === 'string' ? p : p.toString('utf8'))).join('');
}

/** JSON `text` that parsed to `value`, as one line: as received unless it holds a line break (pretty-printed JSON). */
export function oneLine<T extends string | Buffer>(text: T, value: unknown): T | string {
  return text.includes('\n') || text.includes('\r') ? JSON.stringify(value) : text;
}
