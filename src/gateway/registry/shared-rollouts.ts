import { timingSafeEqual } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import type { RolloutRef } from '../../contracts/rollout.js';
import { keys } from '../../storage/keys.js';
import { parseRecord } from '../../storage/records.js';
import { parseSpanKey } from '../../storage/spans.js';
import { GatewayError } from '../routes/openai-error.js';
import {
  newRecord,
  refOfToken,
  rolloutSchema,
  type RegisterRollout,
  type Rollout,
  type RolloutRegistry,
  type RolloutRecord,
} from './rollout-registry.js';
import { listClaims } from './seq-claims.js';
import type { GatewayStore } from '../store.js';

/** What one replica counted for an attempt; close sums them over the replicas. */
const replicaCountersSchema = z.strictObject({
  replicaId: z.string().min(1),
  upstreamFailures: z.number().int().min(0),
  budgetExceeded: z.string().nullable(),
  abandonedCallMs: z.number().min(0).default(0),
});

export interface SharedOptions {
  replicaId: string;
  /** How stale a replica's view of an attempt's status may be: a close is seen by every replica within this. */
  statusTtlMs?: number;
  /** How long close waits for the spans other replicas numbered but have not uploaded yet. */
  closeWaitMs?: number;
  log?: (msg: string, err: unknown) => void;
}

export interface CloseVerdict {
  spans: number;
  upstreamFailures: number;
  budgetExceeded: string | null;
  /** The longest call any replica saw its client leave before the answer (ms). */
  abandonedCallMs: number;
  /** Seqs some replica claimed whose span never reached the store within closeWaitMs; each counts as a failure. */
  missingSpans: number[];
}

export const unavailable = (what: string, err: unknown) =>
  new GatewayError(503, `${what}: object store unreachable (${(err as Error).message})`, {
    type: 'api_error',
    code: 'registry_unavailable',
  });

/**
 * The rollout registry of gateway replicas that share nothing but the object store: each attempt's record lives at
 * keys.gatewayRollout (written at registration and at close), every replica keeps a local cache (the registry file)
 * and re-reads an attempt's status at most every statusTtlMs, so a close through one replica is refused by all within
 * that time. Model-side failures and budget refusals are counted per replica (keys.gatewayReplica) and summed at close.
 */
export class SharedRollouts {
  private readonly ttl: number;
  private refreshing = new Map<Rollout, Promise<void>>();

  constructor(
    private readonly store: GatewayStore,
    private readonly registry: RolloutRegistry,
    private readonly opts: SharedOptions,
  ) {
    this.ttl = opts.statusTtlMs ?? 1000;
    registry.onCountersChanged = (rollout) => this.publishCounters(rollout);
  }

  /** Idempotent across replicas: an attempt registered through any of them keeps its token. */
  async register(input: RegisterRollout): Promise<{ rollout: Rollout; created: boolean }> {
    const known = this.registry.byRef(input);
    if (known) {
      await this.refresh(known, true);
      return { rollout: known, created: false };
    }
    const stored = await this.fetch(input).catch((err: unknown) =>
      Promise.reject(unavailable('cannot register the rollout', err)),
    );
    if (stored) return { rollout: await this.registry.adopt(stored), created: false };
    const record = newRecord(input, true);
    await this.store
      .putJson(keys.gatewayRollout(input), record)
      .catch((err: unknown) => Promise.reject(unavailable('cannot register the rollout', err)));
    return { rollout: await this.registry.adopt(record), created: true };
  }

  /** The rollout of a token, whichever replica registered it; undefined when no attempt has this token. */
  async resolve(token: string): Promise<Rollout | undefined> {
    const known = this.registry.get(token);
    if (known) {
      await this.refresh(known);
      return known;
    }
    const ref = refOfToken(token);
    if (!ref) return undefined;
    const stored = await this.fetch(ref).catch((err: unknown) =>
      Promise.reject(unavailable('cannot look the token up', err)),
    );
    if (!stored || !sameToken(stored.token, token)) return undefined;
    return this.registry.adopt(stored);
  }

  /**
   * Closes the attempt for every replica: publishes that it is closing, waits until no replica can still be admitting
   * one of its calls, then for every claimed seq's span to be in the store (at most closeWaitMs), and sums the counts.
   */
  async close(rollout: Rollout): Promise<CloseVerdict> {
    rollout.closeRequested = true;
    await this.store.putJson(keys.gatewayRollout(rollout.ref), {
      ...rollout.record,
      status: 'closed',
      spans: null,
      closedAt: new Date().toISOString(),
    });
    await sleep(this.ttl + 250);
    const deadline = performance.now() + (this.opts.closeWaitMs ?? 30_000);
    let seqs: Set<number>;
    let missing: number[];
    for (;;) {
      const claims = await listClaims(this.store, rollout.ref);
      seqs = await storedSeqs(this.store, rollout.ref);
      missing = [...new Set(claims.map((c) => c.seq))].filter((s) => !seqs.has(s)).sort((a, b) => a - b);
      if (missing.length === 0 || performance.now() >= deadline) break;
      await sleep(200);
    }
    let upstreamFailures = rollout.record.upstreamFailures + missing.length;
    let budgetExceeded = rollout.record.budgetExceeded;
    let abandonedCallMs = rollout.record.abandonedCallMs;
    for await (const { key } of this.store.list(keys.gatewayReplicas(rollout.ref))) {
      const counters = parseRecord(key, replicaCountersSchema, await this.store.getJsonOrNull(key));
      if (counters.replicaId === this.opts.replicaId) continue;
      upstreamFailures += counters.upstreamFailures;
      budgetExceeded ??= counters.budgetExceeded;
      abandonedCallMs = Math.max(abandonedCallMs, counters.abandonedCallMs);
    }
    return { spans: seqs.size, upstreamFailures, budgetExceeded, abandonedCallMs, missingSpans: missing };
  }

  /** Publishes the closed record with its verdict, so a close through any replica answers the same. */
  async publishClosed(rollout: Rollout): Promise<void> {
    await this.store.putJson(keys.gatewayRollout(rollout.ref), rollout.record);
  }

  private async publishCounters(rollout: Rollout): Promise<void> {
    const { upstreamFailures, budgetExceeded, abandonedCallMs } = rollout.record;
    const key = keys.gatewayReplica(rollout.ref, this.opts.replicaId);
    // Also kept in the local registry file; a replica that could not publish is the one whose store is down.
    await this.store
      .putJson(key, { replicaId: this.opts.replicaId, upstreamFailures, budgetExceeded, abandonedCallMs })
      .catch((err: unknown) => this.opts.log?.(`could not publish ${key}`, err));
  }

  /** Re-reads the attempt's status when it is older than the TTL; a failed read keeps the cached one. */
  private refresh(rollout: Rollout, force = false): Promise<void> {
    if (rollout.record.status === 'closed' || (!force && performance.now() - rollout.checkedAt < this.ttl))
      return Promise.resolve();
    let pending = this.refreshing.get(rollout);
    if (!pending) {
      pending = this.fetch(rollout.ref)
        .then(
          (stored) => {
            rollout.checkedAt = performance.now();
            if (stored?.status !== 'closed') return;
            if (stored.spans === null) rollout.closeRequested = true;
            else
              Object.assign(rollout.record, {
                status: 'closed',
                closedAt: stored.closedAt,
                spans: stored.spans,
                upstreamFailures: stored.upstreamFailures,
                budgetExceeded: stored.budgetExceeded,
                abandonedCallMs: stored.abandonedCallMs,
              });
          },
          (err: unknown) => {
            rollout.checkedAt = performance.now();
            this.opts.log?.('could not re-read a rollout status; the cached one stands', err);
          },
        )
        .finally(() => this.refreshing.delete(rollout));
      this.refreshing.set(rollout, pending);
    }
    return pending;
  }

  private async fetch(ref: RolloutRef): Promise<RolloutRecord | null> {
    const key = keys.gatewayRollout(ref);
    const value = await this.store.getJsonOrNull(key);
    return value === null ? null : parseRecord(key, rolloutSchema, value);
  }
}

/** The seqs of the attempt's spans in the store, from key names (a segment holds every seq its name spans). */
async function storedSeqs(store: GatewayStore, ref: RolloutRef): Promise<Set<number>> {
  const seqs = new Set<number>();
  for await (const { key } of store.list(keys.spans(ref))) {
    const parsed = parseSpanKey(key);
    if (parsed) for (let s = parsed.first; s <= parsed.last; s++) seqs.add(s);
  }
  return seqs;
}

function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
