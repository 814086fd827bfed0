import type { Span } from '../contracts/span.js';
import { keys } from '../storage/keys.js';
import type { InFlight } from './in-flight.js';
import type { GatewayMetrics } from './metrics.js';
import { buildSpan, serializeSpan, type CallContext, type CallOutcome } from './span-record.js';
import type { GatewayStore } from './store.js';
import type { SpanUploader } from './uploader.js';
import type { WriteAheadLog } from './wal.js';

/** 'wal' = fsync'd local log + background upload (default); 'direct' = await the object-store put (bench baseline). */
export type Durability = 'wal' | 'direct';

/** Makes a call's span durable; returns only once it would survive `kill -9` of the gateway. */
export class SpanRecorder {
  constructor(
    private readonly deps: { wal: WriteAheadLog; uploader: SpanUploader; store: GatewayStore; metrics: GatewayMetrics; inFlight: InFlight; durability: Durability },
  ) {}

  async record(ctx: CallContext, outcome: CallOutcome): Promise<Span> {
    if (ctx.seqClaim) ctx.seq = await ctx.seqClaim;
    const span = buildSpan(ctx, outcome);
    const key = keys.span(ctx.rollout.ref, span.seq);
    // Serialised now, so the caller may strip fields from the response it hands the agent afterwards.
    const json = serializeSpan(span, ctx);
    if (this.deps.durability === 'direct') {
      const body = Buffer.from(json);
      await this.deps.store.putBytes(key, body, body.length, 'application/json');
    } else {
      // A lone call has nobody to share its write(2) with, so it skips the wait for the end of the event-loop turn.
      this.deps.uploader.enqueue(await this.deps.wal.append(key, json, this.deps.inFlight.count <= 1));
    }
    const { metrics } = this.deps;
    metrics.spans.inc({ status: span.status });
    metrics.spanBytes.inc(json.length);
    if (span.usage) {
      metrics.tokensIn.inc(span.usage.prompt_tokens || 0);
      metrics.tokensOut.inc(span.usage.completion_tokens || 0);
    }
    return span;
  }
}
