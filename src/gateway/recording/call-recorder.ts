import { keys } from '../../storage/keys.js';
import { callRecordParts, type RecordedAnswer } from './record-line.js';
import type { InFlight } from '../registry/in-flight.js';
import type { GatewayMetrics } from '../metrics.js';
import { spanMeta, type CallContext, type CallOutcome } from './call-context.js';
import type { GatewayStore } from '../store.js';
import type { SpanUploader } from './uploader.js';
import type { WriteAheadLog } from './wal.js';
import type { Retokenized } from '../upstream/teacher.js';

/** 'wal' = fsync'd local log + background upload (default); 'direct' = await the object-store put (bench baseline). */
export type Durability = 'wal' | 'direct';

/** How a call ended, as recorded: the answer's text (not its parsed form), and the usage read from it for the counters. */
export interface RecordedCall {
  answer: RecordedAnswer;
  firstByteAt: Date | null;
  error: CallOutcome['error'];
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } | null;
  /** A teacher's answer in the policy's tokens (upstream/teacher.ts). */
  retokenized?: Retokenized | null;
}

/**
 * Makes a call's record durable; returns only once it would survive `kill -9` of the gateway. The record holds the
 * answer's text as received (record-line.ts); it is what the store keeps, and the span is built from it when read.
 */
export class CallRecorder {
  constructor(
    private readonly deps: {
      wal: WriteAheadLog;
      uploader: SpanUploader;
      store: GatewayStore;
      metrics: GatewayMetrics;
      inFlight: InFlight;
      durability: Durability;
    },
  ) {}

  async record(ctx: CallContext, call: RecordedCall): Promise<void> {
    if (ctx.seqClaim) ctx.seq = await ctx.seqClaim;
    const key = keys.span(ctx.rollout.ref, ctx.seq);
    const parts = callRecordParts(
      spanMeta(ctx, call.firstByteAt, call.error, call.retokenized),
      ctx.upstreamText,
      call.answer,
      ctx.requestText,
    );
    if (this.deps.durability === 'direct') {
      const body = Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
      await this.deps.store.putBytes(key, body, body.length, 'application/json');
    } else {
      // A lone call has nobody to share its write(2) with, so it skips the wait for the end of the event-loop turn.
      const entry = await this.deps.wal.append(key, parts, this.deps.inFlight.count <= 1);
      this.deps.uploader.enqueue(entry);
      this.deps.metrics.walBytes.inc(entry.bytes);
    }
    const { metrics } = this.deps;
    metrics.spans.inc({ status: call.error ? 'error' : 'ok' });
    const count = (n: unknown) => (typeof n === 'number' && Number.isFinite(n) ? n : 0);
    if (call.usage) {
      metrics.tokensIn.inc(count(call.usage.prompt_tokens));
      metrics.tokensOut.inc(count(call.usage.completion_tokens));
    }
  }
}
