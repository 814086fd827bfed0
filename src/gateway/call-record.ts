/* eslint-disable @typescript-eslint/no-explicit-any -- engine JSON */
import { serializeSpan, spanOf, type SpanMeta } from './span-record.js';
import { StreamAssembler } from './stream-assembler.js';

/**
 * What the WAL holds for one call: the span's meta, the upstream request as sent, and the engine's answer as the
 * text it arrived in (a whole JSON answer, or the data of each SSE chunk), spliced in without being serialised
 * again. That is one cheap append on the call's path; the span is built from it later (spanLineOf), off that path.
 * Every text spliced in is one line of JSON that already parsed (`oneLine` re-serialises one that is not).
 */
export type RecordedAnswer = { json: string | Buffer } | { chunks: string[] };

const PREFIX = '{"callRecord":1,';

/** The record as the pieces the WAL writes one after the other (the answer's bytes are not copied or re-encoded). */
export function callRecordParts(meta: SpanMeta, upstreamText: string, answer: RecordedAnswer): (string | Buffer)[] {
  const head = `${PREFIX}"meta":${JSON.stringify(meta)},"upstreamRequest":${upstreamText},`;
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

/** A WAL entry written by this gateway (a call record) rather than a span line an older gateway wrote. */
export function isCallRecord(json: string): boolean {
  return json.startsWith(PREFIX);
}

/**
 * The stored span line (serializeSpan's compact form) for a WAL entry: a call record is built into its span the way
 * the gateway built spans on the call's path before; an entry an older gateway wrote is already that line.
 */
export function spanLineOf(json: string): string {
  if (!isCallRecord(json)) return json;
  const record = JSON.parse(json) as { meta: SpanMeta; upstreamRequest: unknown; response?: unknown; chunks?: unknown[] };
  let response: any = record.response ?? null;
  if (Array.isArray(record.chunks)) {
    const assembler = new StreamAssembler(record.meta.endpoint);
    for (const chunk of record.chunks) assembler.add(chunk);
    response = assembler.response();
  }
  const span = spanOf(record.meta, record.upstreamRequest, response);
  return serializeSpan(span, { upstreamText: JSON.stringify(record.upstreamRequest) });
}
