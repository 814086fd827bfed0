import { spanSchema, type Span } from '../contracts/span.js';
import { CorruptObjectError } from './errors.js';
import { keys, spanSegmentName } from './keys.js';
import { CALL_RECORD_PREFIX, isCallRecord, spanOfCallRecord, type CallRecord } from './call-records.js';
import { spanObjectText } from './span-compression.js';
import type { RolloutRef } from '../contracts/rollout.js';

/** What reading spans needs from the object store; the full ObjectStore and the gateway's store both fit. */
export interface SpanStore {
  list(prefix: string): AsyncIterable<{ key: string }>;
  getBytes(key: string): Promise<Buffer>;
}

/** A span object that does not parse or does not match the Span contract; `fields` name the bad paths. */
export class CorruptSpanError extends CorruptObjectError {
  constructor(key: string, detail: string, fields: string[] = []) {
    super(null, key, detail, { fields });
    this.name = 'CorruptSpanError';
  }
}

/** A key under a spans prefix: a single span (`00000012.json`, first = last) or a segment (`00000003-00000009.jsonl`). */
export interface SpanKey {
  spansPrefix: string;
  first: number;
  last: number;
}

const SPAN_NAME = /^(\d{8})\.json$/;
const SEGMENT_NAME = /^(\d{8})-(\d{8})\.jsonl$/;

/** null for keys that hold no spans (anything else a prefix listing may show). */
export function parseSpanKey(key: string): SpanKey | null {
  const slash = key.lastIndexOf('/');
  const name = key.slice(slash + 1);
  const spansPrefix = key.slice(0, slash + 1);
  if (!spansPrefix.endsWith('/spans/')) return null;
  const single = SPAN_NAME.exec(name);
  if (single) return { spansPrefix, first: Number(single[1]), last: Number(single[1]) };
  const segment = SEGMENT_NAME.exec(name);
  if (segment && Number(segment[1]) <= Number(segment[2]))
    return { spansPrefix, first: Number(segment[1]), last: Number(segment[2]) };
  return null;
}

/** The segment key for spans first..last, given the single-span key of any span of the same attempt (keys.span). */
export function segmentKeyFor(spanKey: string, first: number, last: number): string {
  const parsed = parseSpanKey(spanKey);
  if (!parsed || parsed.first !== parsed.last) throw new Error(`not a single-span key: ${JSON.stringify(spanKey)}`);
  return `${parsed.spansPrefix}${spanSegmentName(first, last)}`;
}

/**
 * The span one stored line holds, not yet checked against the Span contract: the gateway stores each call as a call
 * record (call-records.ts), built into its span here. Throws on a line that is not a call record or not JSON.
 */
export function spanOfStoredLine(line: string): unknown {
  if (!isCallRecord(line)) throw new Error(`not a call record (a stored span line starts with ${CALL_RECORD_PREFIX})`);
  return spanOfCallRecord(JSON.parse(line) as CallRecord);
}

function parseObject(key: string, bytes: Buffer, segment: boolean): Span[] {
  let text: string;
  try {
    text = spanObjectText(bytes);
  } catch (err) {
    throw new CorruptSpanError(key, `not brotli, gzip or JSON text: ${(err as Error).message}`);
  }
  const lines = segment ? text.split('\n').filter((l) => l.length > 0) : [text];
  return lines.map((line, i) => {
    const where = segment ? `line ${i + 1}: ` : '';
    let value: unknown;
    try {
      value = spanOfStoredLine(line);
    } catch (err) {
      throw new CorruptSpanError(key, `${where}${(err as Error).message}`);
    }
    const parsed = spanSchema.safeParse(value);
    if (parsed.success) return parsed.data;
    const fields = parsed.error.issues.map((issue) => issue.path.map(String).join('.') || '(root)');
    throw new CorruptSpanError(
      key,
      `${where}${parsed.error.issues.map((issue, j) => `${fields[j]}: ${issue.message}`).join('; ')}`,
      fields,
    );
  });
}

/**
 * The spans of one rollout attempt in seq order, each seq once, whether stored one object per span or in segments
 * (a segment re-uploaded after a WAL replay may overlap another). The attempt's spans are held in memory.
 */
export async function* readSpans(store: SpanStore, ref: RolloutRef): AsyncGenerator<Span> {
  const bySeq = new Map<number, Span>();
  for await (const { key } of store.list(keys.spans(ref))) {
    const parsed = parseSpanKey(key);
    if (!parsed) continue;
    for (const span of parseObject(key, await store.getBytes(key), key.endsWith('.jsonl'))) {
      if (!bySeq.has(span.seq)) bySeq.set(span.seq, span);
    }
  }
  yield* [...bySeq.keys()].sort((a, b) => a - b).map((seq) => bySeq.get(seq)!);
}

/**
 * How many distinct spans (seqs) the attempt has in the store, from the key names alone: a segment holds exactly
 * the consecutive seqs its name spans (the uploader never writes one with a gap), so nothing is downloaded.
 */
export async function countSpans(store: Pick<SpanStore, 'list'>, ref: RolloutRef): Promise<number> {
  const seqs = new Set<number>();
  for await (const { key } of store.list(keys.spans(ref))) {
    const parsed = parseSpanKey(key);
    if (parsed) for (let seq = parsed.first; seq <= parsed.last; seq++) seqs.add(seq);
  }
  return seqs.size;
}
