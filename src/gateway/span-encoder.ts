import type { Worker } from 'node:worker_threads';
import { compressSegment, compressSegmentAsync, SEGMENT_CONTENT_TYPE, type SegmentCompression } from '../storage/span-compression.js';
import type { AnswerCache } from './answer-cache.js';
import { checkAnswer, type CheckedAnswer } from './answer-check.js';
import { spanLineOf } from './call-record.js';
import type { Asked } from './extensions.js';
import { readEntries, type EntryRef } from './wal-segment.js';
import { startGatewayWorker } from './worker-bootstrap.js';

/** One span object ready to put: its bytes, their content type, and the compact span text it holds (metrics). */
export interface EncodedObject {
  body: Buffer;
  contentType: string;
  spanChars: number;
}

export interface EncodeJob {
  /** WAL entries (call records, or span lines an older gateway wrote) in seq order, read from their files if need be. */
  entries: EntryRef[];
  /** A segment (JSON Lines, compressed as `compression` says) rather than one span alone (plain JSON). */
  segment: boolean;
  compression: SegmentCompression;
}

/** Builds the spans of WAL entries and the object that holds them; pure, so it runs the same in a worker. */
export function encodeSpanObject(job: EncodeJob, answers?: AnswerCache): EncodedObject {
  const lines = readEntries(job.entries).map((e) => spanLineOf(e, answers));
  const text = spanObjectText(lines, job);
  return { body: job.segment ? compressSegment(text, job.compression) : text, contentType: contentTypeOf(job), spanChars: charsOf(lines) };
}

/**
 * encodeSpanObject for the worker thread: it yields between spans (every few ms) and compresses on libuv's pool, so
 * the answer checks the call's path waits on are not queued behind a whole segment.
 */
export async function encodeSpanObjectYielding(job: EncodeJob, answers: AnswerCache): Promise<EncodedObject> {
  const lines: string[] = [];
  let since = performance.now();
  for (const entry of readEntries(job.entries)) {
    lines.push(spanLineOf(entry, answers));
    if (performance.now() - since < 2) continue;
    await new Promise(setImmediate);
    since = performance.now();
  }
  const text = spanObjectText(lines, job);
  return { body: job.segment ? await compressSegmentAsync(text, job.compression) : text, contentType: contentTypeOf(job), spanChars: charsOf(lines) };
}

// A segment is JSON Lines; a single span is its line alone (plain JSON).
function spanObjectText(lines: string[], job: EncodeJob): Buffer {
  if (!job.segment) return Buffer.from(lines[0] ?? '');
  return Buffer.from(lines.map((l) => `${l}\n`).join(''));
}

const charsOf = (lines: string[]) => lines.reduce((n, l) => n + l.length, 0);
const contentTypeOf = (job: EncodeJob) => (job.segment ? SEGMENT_CONTENT_TYPE[job.compression] : 'application/json');

type Waiter = { resolve: (m: WorkerAnswer) => void; reject: (err: Error) => void };
interface WorkerAnswer { id: number; ready?: true; body?: Uint8Array; contentType?: string; spanChars?: number; checked?: CheckedAnswer | null; error?: string }

/**
 * Turns WAL entries into span objects for the uploader, and reads non-streamed answers for the call's path. With
 * `worker` (the gateway's default) the parsing, span building and compression run on a worker thread, so they use
 * another core instead of the event loop the agents' calls wait on; an answer it parsed for the call is kept there
 * and not parsed again for the span (answer-cache.ts). Without, on the event loop (compression on libuv's pool).
 * A worker that dies is replaced at the next job; until one is up, answers are checked inline.
 */
export class SpanEncoder {
  private worker: Worker | null = null;
  private ready = false;
  private nextId = 0;
  private readonly waiting = new Map<number, Waiter>();

  constructor(private readonly opts: { worker: boolean }) {}

  async encode(job: EncodeJob): Promise<EncodedObject> {
    if (!this.opts.worker) {
      const inline = encodeSpanObject({ ...job, compression: 'none' });
      if (!job.segment || job.compression === 'none') return inline;
      return { body: await compressSegmentAsync(inline.body, job.compression), contentType: SEGMENT_CONTENT_TYPE[job.compression], spanChars: inline.spanChars };
    }
    const m = await this.request({ kind: 'encode', job });
    return { body: Buffer.from(m.body!.buffer, m.body!.byteOffset, m.body!.byteLength), contentType: m.contentType!, spanChars: m.spanChars! };
  }

  /**
   * The answer read as answer-check.ts says. `alone`: no other call is in flight, so the event loop has nothing better
   * to do and the hop to the thread would only add latency; the thread is also skipped until it is up.
   */
  check(bytes: Buffer, asked: Asked, alone = false): Promise<CheckedAnswer | null> | CheckedAnswer | null {
    if (!this.opts.worker || alone || !this.ready) {
      if (this.opts.worker && !this.worker) this.start();
      return checkAnswer(bytes, asked);
    }
    // Copied, not transferred: the call record still writes these bytes.
    return this.request({ kind: 'check', bytes, asked }).then((m) => m.checked ?? null);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.ready = false;
    if (worker) await worker.terminate();
  }

  private request(message: object): Promise<WorkerAnswer> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  }

  private start(): Worker {
    const worker = startGatewayWorker('span-encoder-worker');
    worker.on('message', (m: WorkerAnswer) => {
      if (m.ready) {
        this.ready = this.worker === worker;
        return;
      }
      const waiter = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) waiter?.reject(new Error(`span encoder: ${m.error}`));
      else waiter?.resolve(m);
    });
    const fail = (err: Error) => {
      if (this.worker === worker) {
        this.worker = null;
        this.ready = false;
      }
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`span encoder worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }
}
