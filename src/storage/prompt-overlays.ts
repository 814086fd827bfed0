import { z } from 'zod';
import type { ActivePrompt, PromptOverlay } from '../contracts/prompt-overlay.js';
import { assertId, keys } from './keys.js';
import type { ObjectStore } from './object-store.js';

const isoDate = z.string().min(1);

/** The stored shape of a PromptOverlay; version 0 is the agent's own prompt and is never stored. */
export const promptOverlaySchema = z.strictObject({
  runId: z.string().min(1),
  version: z.number().int().min(1),
  mode: z.enum(['replace', 'prepend', 'append']),
  template: z.string().max(100_000),
  origin: z.strictObject({
    strategy: z.enum(['seed', 'manual', 'textual_gradient', 'bootstrap']),
    parents: z.array(z.number().int().min(0)),
    round: z.number().int().min(0).nullable(),
    note: z.string(),
  }),
  createdAt: isoDate,
}) satisfies z.ZodType<PromptOverlay>;

const promotionSchema = z.strictObject({ version: z.number().int().min(0), score: z.number().nullable(), promotedAt: isoDate });

export const activePromptSchema = z.strictObject({
  runId: z.string().min(1),
  version: z.number().int().min(0),
  score: z.number().nullable(),
  promotedAt: isoDate,
  history: z.array(promotionSchema),
}) satisfies z.ZodType<ActivePrompt>;

/** A bad overlay or a promotion to a version that was never written: the caller's mistake, not retryable. */
export class PromptOverlayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PromptOverlayError';
  }
}

export type PromptOverlayStore = ReturnType<typeof createPromptOverlayStore>;

/** Versioned prompt overlays of a run and its active prompt, at keys.promptOverlay / keys.activePrompt. */
export function createPromptOverlayStore(store: ObjectStore) {
  const get = (runId: string, version: number): Promise<PromptOverlay | null> =>
    store.getJsonOrNull(keys.promptOverlay(runId, version), promptOverlaySchema);

  return {
    /**
     * Write-once: when the version exists the stored overlay comes back unchanged, so a retried proposer reuses its
     * first output. Versions are allocated by the one workflow of the run, so no two writers race for a version.
     */
    async put(overlay: PromptOverlay): Promise<PromptOverlay> {
      const parsed = promptOverlaySchema.safeParse(overlay);
      if (!parsed.success) {
        throw new PromptOverlayError(`invalid prompt overlay: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
      }
      const key = keys.promptOverlay(assertId('run', overlay.runId), overlay.version);
      const stored = await store.getJsonOrNull(key, promptOverlaySchema);
      if (stored) return stored;
      await store.putJson(key, parsed.data);
      return parsed.data;
    },

    get,

    /** Every overlay of the run, in version order. */
    async list(runId: string): Promise<PromptOverlay[]> {
      const out: PromptOverlay[] = [];
      for await (const o of store.list(keys.promptOverlays(runId))) {
        if (o.key.endsWith('.json')) out.push(await store.getJson(o.key, promptOverlaySchema));
      }
      return out.sort((a, b) => a.version - b.version);
    },

    getActive(runId: string): Promise<ActivePrompt | null> {
      return store.getJsonOrNull(keys.activePrompt(runId), activePromptSchema);
    },

    /** Make `version` (0 = the agent's own prompt) the run's active prompt; a repeat of the current one is a no-op. */
    async promote(runId: string, version: number, score: number | null): Promise<ActivePrompt> {
      const key = keys.activePrompt(runId);
      if (!Number.isSafeInteger(version) || version < 0) throw new PromptOverlayError(`promote ${runId}: version must be an integer >= 0, got ${version}`);
      const current = await store.getJsonOrNull(key, activePromptSchema);
      if (current?.version === version) return current;
      if (version > 0 && !(await get(runId, version))) throw new PromptOverlayError(`promote ${runId}: overlay version ${version} does not exist`);
      const promotedAt = new Date().toISOString();
      const entry = { version, score, promotedAt };
      const active: ActivePrompt = { runId, ...entry, history: [...(current?.history ?? []), entry] };
      await store.putJson(key, active);
      return active;
    },
  };
}
