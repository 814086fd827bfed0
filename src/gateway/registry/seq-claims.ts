import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RolloutRef } from '../../contracts/rollout.js';
import { keys } from '../../storage/keys.js';
import type { Rollout } from './rollout-registry.js';
import type { GatewayStore } from '../store.js';

const CLAIM_NAME = /^(\d{8})\.(.+)$/;
const EMPTY = Buffer.alloc(0);

export interface SeqClaim {
  seq: number;
  key: string;
}

/** The seq claims of one attempt, from their key names; `from`: only those of seq >= from (a listing that starts there). */
export async function listClaims(store: Pick<GatewayStore, 'list'>, ref: RolloutRef, from = 0): Promise<SeqClaim[]> {
  const prefix = keys.seqClaims(ref);
  const out: SeqClaim[] = [];
  // Claim names start with the 8-digit seq, so every claim of seq >= from sorts after that bare number.
  for await (const { key } of store.list(prefix, from > 0 ? `${prefix}${String(from).padStart(8, '0')}` : undefined)) {
    const m = CLAIM_NAME.exec(key.slice(prefix.length));
    if (m) out.push({ seq: Number(m[1]), key });
  }
  return out;
}

/**
 * Span seq numbers for gateway replicas that share nothing but the object store, with no conditional writes: a replica
 * puts a claim for n, then lists the attempt's claims; it holds n only if no other claim is at n or above, else it
 * deletes its claim and tries above the highest one it saw. On a strongly consistent store (S3, MinIO, rclone) two
 * claims never both hold n, and a winner saw every earlier winner, so seqs grow in the order calls were numbered;
 * two claims racing for one n may both step back, which leaves a gap (readSpans and the batch builder sort by seq and
 * need no dense seqs). Costs one put and one list (of the claims from n on) per call.
 */
export class SeqClaims {
  constructor(
    private readonly store: GatewayStore,
    private readonly replicaId: string,
  ) {}

  async next(rollout: Rollout): Promise<number> {
    let n = rollout.nextSeq;
    for (let round = 0; ; round++) {
      const key = keys.seqClaim(rollout.ref, n, `${this.replicaId}.${randomBytes(6).toString('hex')}`);
      await retried(() => this.store.putBytes(key, EMPTY, 0, 'application/octet-stream'));
      let rivals: SeqClaim[];
      try {
        rivals = (await retried(() => listClaims(this.store, rollout.ref, n))).filter(
          (c) => c.key !== key && c.seq >= n,
        );
      } catch (err) {
        // Not knowing whether it won, the claim is withdrawn, so close never waits for a span it will not get.
        await this.store.remove(key).catch(() => undefined);
        throw err;
      }
      if (rivals.length === 0) {
        rollout.nextSeq = Math.max(rollout.nextSeq, n + 1);
        return n;
      }
      await retried(() => this.store.remove(key));
      n = Math.max(...rivals.map((c) => c.seq)) + 1;
      // Two replicas stepping over each other again and again back off at random until one gets through.
      if (round >= 2) await sleep(Math.random() * 5 * round);
    }
  }
}

// rclone's S3 server answers a put 500 now and then while a sibling object is being deleted; each step is idempotent.
async function retried<T>(step: () => Promise<T>, tries = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await step();
    } catch (err) {
      if (i >= tries) throw err;
      await sleep(10 * 2 ** i * (0.5 + Math.random()));
    }
  }
}
