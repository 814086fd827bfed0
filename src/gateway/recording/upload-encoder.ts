import { Worker } from 'node:worker_threads';
import {
  compressSegment,
  compressSegmentAsync,
  SEGMENT_CONTENT_TYPE,
  type SegmentCompression,
} from '../../storage/span-compression.js';
import { readEntryLines, type EntryRef } from './wal-segment.js';

/** One span object ready to put: its bytes, their content type, and the bytes of the records it holds (metrics). */
export interface EncodedObject {
  body: Buffer;
  contentType: string;
  spanBytes: number;
}

export interface EncodeJob {
  /** WAL entries (call records) in seq order, read from their files if need be. */
  entries: EntryRef[];
  /** A segment (JSON Lines, compressed as `compression` says) rather than one span alone (plain JSON). */
  segment: boolean;
  compression: SegmentCompression;
}

/**
 * The object that holds WAL entries as stored: the entries' lines as logged (call records, read as spans by
 * readSpans), joined and compressed, never parsed. Pure, so it runs the same in a worker.
 */
export function encodeSpanObject(job: EncodeJob): EncodedObject {
  if (!job.segment) {
    const body = readEntryLines(job.entries.slice(0, 1), false);
    return { body, contentType: 'application/json', spanBytes: body.length };
  }
  const text = readEntryLines(job.entries);
  return {
    body: compressSegment(text, job.compression),
    contentType: SEGMENT_CONTENT_TYPE[job.compression],
    spanBytes: text.length - job.entries.length,
  };
}

/**
 * Turns WAL entries into span objects for the uploader. With `worker` (the gateway's default) reading them back
 * and compressing run on a worker thread, so they use another core instead of the event loop the agents' calls
 * wait on; without, on the event loop (compression on libuv's pool). A worker that dies is replaced at the next job.
 */
export class UploadEncoder {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (o: EncodedObject) => void; reject: (err: Error) => void }>();

  constructor(private readonly opts: { worker: boolean }) {}

  async encode(job: EncodeJob): Promise<EncodedObject> {
    if (!this.opts.worker) {
      const inline = encodeSpanObject({ ...job, compression: 'none' });
      if (!job.segment || job.compression === 'none') return inline;
      return {
        body: await compressSegmentAsync(inline.body, job.compression),
        contentType: SEGMENT_CONTENT_TYPE[job.compression],
        spanBytes: inline.spanBytes,
      };
    }
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ id, job });
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    // Only --cpu-prof* is passed on (bench/gateway-profile.ts profiles this thread too); the rest stays the parent's.
    const worker = new Worker(workerBootstrap(), {
      eval: true,
      execArgv: process.execArgv.filter((a) => a.startsWith('--cpu-prof')),
    });
    // The worker never keeps the gateway process alive on its own.
    worker.unref();
    worker.on(
      'message',
      (m: { id: number; body?: Uint8Array; contentType?: string; spanBytes?: number; error?: string }) => {
        const waiter = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error !== undefined) waiter?.reject(new Error(`span encoder: ${m.error}`));
        else
          waiter?.resolve({
            body: Buffer.from(m.body!.buffer, m.body!.byteOffset, m.body!.byteLength),
            contentType: m.contentType!,
            spanBytes: m.spanBytes!,
          });
      },
    );
    const fail = (err: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`span encoder worker exited (${code})`)));
    this.worker = worker;
    return worker;
  }
}

// Run from TypeScript sources (tsx), the worker registers tsx itself: a worker does not inherit hooks from register().
function workerBootstrap(): string {
  const here = import.meta.url;
  const ts = here.endsWith('.ts');
  const entry = new URL(ts ? './upload-encoder-worker.ts' : './upload-encoder-worker.js', here).href;
  if (!ts) return `import(${JSON.stringify(entry)});`;
  return `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
}
