import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { PromptOverlay } from '../../contracts/prompt-overlay.js';
import { rolloutRefSchema, type RolloutRef } from '../../contracts/rollout.js';
import { budgetUsageSchema, rolloutBudgetSchema } from './budget.js';
import { hostedToolsSchema } from '../../contracts/hosted-tools.js';
import { roleRouteSchema } from '../../contracts/team.js';

export const registerRolloutSchema = z.strictObject({
  ...rolloutRefSchema.shape,
  mode: z.enum(['train', 'eval']),
  policyModel: z.string().min(1).max(256),
  /** Sampling the gateway imposes on every call of this rollout (e.g. greedy evaluation); null leaves the agent's. */
  sampling: z
    .strictObject({ temperature: z.number().min(0).max(2).optional(), top_p: z.number().gt(0).max(1).optional() })
    .nullish(),
  /** The stored prompt overlay applied to every call (see prompt-overlay.ts); null or version 0: the agent's own prompt. */
  promptOverlay: z.strictObject({ version: z.number().int().min(0) }).nullish(),
  /** Per-attempt budget (model calls, completion tokens, wall time, per-call caps); null or absent: unbounded. */
  budget: rolloutBudgetSchema.nullish(),
  /** Hosted tools (web_search, file_search, ...) in a Responses call: dropped and noted (null, 'drop') or refused. */
  hostedTools: hostedToolsSchema.nullish(),
  /**
   * A teacher serves this rollout's calls instead of the model server (run config `teacher`): its OpenAI-compatible
   * base URL (…/v1), model, and the gateway's environment variable with its key; the answers are tokenized with the
   * policy's tokenizer (the model server's /tokenize) for the span.
   */
  /**
   * Agent roles (run config `team`): each call goes to the model of the first role it matches, and its span records the
   * role; a call no role matches goes to `unmatched.model` (role null), or is refused when `unmatched` is 'refuse'.
   * Absent: every call goes to `policyModel`.
   */
  team: z
    .strictObject({
      roles: z.array(roleRouteSchema).min(1).max(16),
      unmatched: z.union([z.literal('refuse'), z.strictObject({ model: z.string().min(1).max(256) })]),
    })
    .nullish(),
  teacher: z
    .strictObject({
      baseUrl: z.url({ protocol: /^https?$/ }).max(2048),
      model: z.string().min(1).max(256),
      apiKeyEnv: z.string().regex(/^VOLT_TEACHER_[A-Z0-9_]+$/),
    })
    .nullish(),
});
export type RegisterRollout = z.output<typeof registerRolloutSchema>;

export const rolloutSchema = registerRolloutSchema.extend({
  token: z.string().min(1),
  status: z.enum(['open', 'closed']),
  createdAt: z.string(),
  closedAt: z.string().nullable(),
  spans: z.number().int().min(0).nullable(),
  /**
   * Calls of this attempt that failed on the model side (after retries): the attempt is an infra failure. Kept on
   * disk, so a gateway restart never forgets one.
   */
  upstreamFailures: z.number().int().min(0).default(0),
  usage: budgetUsageSchema.default({ calls: 0, completionTokens: 0 }),
  /** Why a call of this attempt was refused for its budget (the attempt ends agent_failed), null if none was. */
  budgetExceeded: z.string().nullable().default(null),
  /**
   * The longest call of this attempt whose client left before its answer, in ms: an agent killed (its timeout) while
   * the model held its call. The runner tells an engine too slow for the timeout from an agent that ran out of time.
   */
  abandonedCallMs: z.number().min(0).default(0),
});
export type RolloutRecord = z.output<typeof rolloutSchema>;

/** A registered rollout plus what only this process knows: the next seq and its in-flight calls. */
export interface Rollout {
  record: RolloutRecord;
  ref: RolloutRef;
  nextSeq: number;
  inFlight: number;
  idle: (() => void)[];
  /** The overlay its calls get; undefined until loaded (set at registration, or on the first call after a restart). */
  overlay: PromptOverlay | null | undefined;
  /** Replicas: when the shared record was last read (performance.now()), and whether some replica began closing it. */
  checkedAt: number;
  closeRequested: boolean;
}

/** Token → rollout map, persisted atomically (tmp + fsync + rename) so rollouts survive a restart. */
export class RolloutRegistry {
  private byToken = new Map<string, Rollout>();
  private byRefKey = new Map<string, Rollout>();
  private writes: Promise<void> = Promise.resolve();
  /** Replicas: publishes this replica's counters of an attempt (shared-rollouts.ts) after each local change. */
  onCountersChanged?: (rollout: Rollout) => Promise<void>;

  constructor(private readonly file: string) {}

  async load(): Promise<Rollout[]> {
    let text: string;
    try {
      text = await fs.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
    const records = z.array(rolloutSchema).parse(JSON.parse(text));
    // Replicas: what the file says may have changed while this process was down, so the first call re-reads it.
    for (const record of records) this.add(record).checkedAt = -Infinity;
    return [...this.byToken.values()];
  }

  get(token: string): Rollout | undefined {
    return this.byToken.get(token);
  }

  byRef(ref: RolloutRef): Rollout | undefined {
    return this.byRefKey.get(refKey(ref));
  }

  all(): Rollout[] {
    return [...this.byToken.values()];
  }

  /** Idempotent per (runId, iteration, rolloutId, attempt): an open rollout keeps its token. */
  async register(input: RegisterRollout): Promise<{ rollout: Rollout; created: boolean }> {
    const existing = this.byRef(input);
    if (existing) return { rollout: existing, created: false };
    const rollout = this.add(newRecord(input));
    await this.persist();
    return { rollout, created: true };
  }

  /** A record this process did not create: registered through another replica, read from the object store. */
  async adopt(record: RolloutRecord): Promise<Rollout> {
    const known = this.byRef(record);
    if (known) return known;
    const rollout = this.add(record);
    await this.persist();
    return rollout;
  }

  /** Counts a model-side failure of one of the rollout's calls; durable once this resolves. */
  async noteUpstreamFailure(rollout: Rollout): Promise<void> {
    rollout.record.upstreamFailures += 1;
    await this.persist();
    await this.onCountersChanged?.(rollout);
  }

  /** Records that a call was refused for the attempt's budget; durable before the agent hears of it. */
  async noteBudgetExceeded(rollout: Rollout, reason: string): Promise<void> {
    rollout.record.budgetExceeded ??= reason;
    await this.persist();
    await this.onCountersChanged?.(rollout);
  }

  /** Records how long a call ran before its client left; durable once this resolves. Keeps the longest. */
  async noteAbandonedCall(rollout: Rollout, ms: number): Promise<void> {
    if (ms <= rollout.record.abandonedCallMs) return;
    rollout.record.abandonedCallMs = Math.round(ms);
    await this.persist();
    await this.onCountersChanged?.(rollout);
  }

  async markClosed(rollout: Rollout, spans: number): Promise<void> {
    rollout.record.status = 'closed';
    rollout.record.closedAt = new Date().toISOString();
    rollout.record.spans = spans;
    await this.persist();
  }

  private add(record: RolloutRecord): Rollout {
    const ref: RolloutRef = {
      runId: record.runId,
      iteration: record.iteration,
      rolloutId: record.rolloutId,
      attempt: record.attempt,
    };
    const rollout: Rollout = {
      record,
      ref,
      nextSeq: 0,
      inFlight: 0,
      idle: [],
      overlay: record.promptOverlay ? undefined : null,
      checkedAt: performance.now(),
      closeRequested: false,
    };
    this.byToken.set(record.token, rollout);
    this.byRefKey.set(refKey(ref), rollout);
    return rollout;
  }

  private persist(): Promise<void> {
    const next = this.writes.then(() => this.writeFile());
    this.writes = next.catch(() => undefined);
    return next;
  }

  private async writeFile(): Promise<void> {
    await fs.mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    // Tokens are capabilities: the file is readable by the gateway's user only.
    const handle = await fs.open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(
        JSON.stringify(
          this.all().map((r) => r.record),
          null,
          1,
        ),
      );
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(tmp, this.file);
    const dir = await fs.open(path.dirname(this.file), 'r');
    await dir.sync().finally(() => dir.close());
  }
}

/**
 * A fresh open record with a token of 32 random bytes; `named` (replicas) prefixes it with the attempt it belongs to
 * (base64url JSON, then a dot), so a replica that never saw the token finds the attempt's shared record without an index.
 */
export function newRecord(input: RegisterRollout, named = false): RolloutRecord {
  const secret = randomBytes(32).toString('base64url');
  return {
    ...input,
    promptOverlay: input.promptOverlay?.version ? { version: input.promptOverlay.version } : null,
    token: named ? `${Buffer.from(refKey(input)).toString('base64url')}.${secret}` : secret,
    status: 'open',
    createdAt: new Date().toISOString(),
    closedAt: null,
    spans: null,
    upstreamFailures: 0,
    usage: { calls: 0, completionTokens: 0 },
    budgetExceeded: null,
    abandonedCallMs: 0,
  };
}

// A token names its attempt as [runId, iteration, rolloutId, attempt], each checked as a RolloutRef field is.
const field = rolloutRefSchema.shape;
const refSchema = z.tuple([field.runId, field.iteration, field.rolloutId, field.attempt]);

/** The attempt a token names (the part before its dot), or null for anything that is not such a token. */
export function refOfToken(token: string): RolloutRef | null {
  const dot = token.indexOf('.');
  if (dot <= 0 || dot > 800) return null;
  try {
    const parsed = refSchema.safeParse(JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8')));
    if (!parsed.success) return null;
    const [runId, iteration, rolloutId, attempt] = parsed.data;
    return { runId, iteration, rolloutId, attempt };
  } catch {
    return null;
  }
}

function refKey(r: RolloutRef): string {
  return JSON.stringify([r.runId, r.iteration, r.rolloutId, r.attempt]);
}
