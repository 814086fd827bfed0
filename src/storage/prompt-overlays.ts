import { z } from 'zod';
import {
  activePromptSchema,
  promptOverlaySchema,
  type ActivePrompt,
  type PromptOverlay,
} from '../contracts/prompt-overlay.js';
import { assertId, keys } from './keys.js';
import { parseRecord } from './records.js';

/** The slice of ObjectStore this needs, so the gateway's narrower store works too; every read is validated here. */
export interface OverlayObjectStore {
  getJsonOrNull(key: string): Promise<unknown>;
  putJson(key: string, value: unknown): Promise<unknown>;
  list(prefix: string): AsyncIterable<{ key: string }>;
}

/** A bad overlay or a promotion to a version that was never written: the caller's mistake, not retryable. */
export class PromptOverlayError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PromptOverlayError';
  }
}

const issues = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');

export type PromptOverlayStore = ReturnType<typeof createPromptOverlayStore>;

/** Versioned prompt overlays of a run and its active prompt, at keys.promptOverlay / keys.activePrompt. */
export function createPromptOverlayStore(store: OverlayObjectStore) {
  const read = async <T>(key: string, schema: z.ZodType<T>): Promise<T | null> => {
    const value = await store.getJsonOrNull(key);
    return value === null ? null : parseRecord(key, schema, value);
  };
  const get = async (runId: string, version: number): Promise<PromptOverlay | null> =>
    read(keys.promptOverlay(runId, version), promptOverlaySchema);

  return {
    /**
     * Write-once: when the version exists the stored overlay comes back unchanged, so a retried proposer reuses its
     * first output. Versions are allocated by the one workflow of the run, so no two writers race for a version.
     */
    async put(overlay: PromptOverlay): Promise<PromptOverlay> {
      assertId('run', overlay.runId);
      const parsed = promptOverlaySchema.safeParse(overlay);
      if (!parsed.success) {
        throw new PromptOverlayError(`invalid prompt overlay: ${issues(parsed.error)}`);
      }
      const key = keys.promptOverlay(overlay.runId, overlay.version);
      const stored = await read(key, promptOverlaySchema);
      if (stored) return stored;
      await store.putJson(key, parsed.data);
      return parsed.data;
    },

    get,

    /** Every overlay of the run, in version order. */
    async list(runId: string): Promise<PromptOverlay[]> {
      const out: PromptOverlay[] = [];
      for await (const o of store.list(keys.promptOverlays(runId))) {
        const overlay = o.key.endsWith('.json') ? await read(o.key, promptOverlaySchema) : null;
        if (overlay) out.push(overlay);
      }
      return out.sort((a, b) => a.version - b.version);
    },

    async getActive(runId: string): Promise<ActivePrompt | null> {
      return read(keys.activePrompt(runId), activePromptSchema);
    },

    /** Make `version` (0 = the agent's own prompt) the run's active prompt; a repeat of the current one is a no-op. */
    async promote(runId: string, version: number, score: number | null): Promise<ActivePrompt> {
      const key = keys.activePrompt(runId);
      if (!Number.isSafeInteger(version) || version < 0)
        throw new PromptOverlayError(`promote ${runId}: version must be an integer >= 0, got ${version}`);
      const current = await read(key, activePromptSchema);
      if (current?.version === version) return current;
      if (version > 0 && !(await get(runId, version)))
        throw new PromptOverlayError(`promote ${runId}: overlay version ${version} does not exist`);
      const promotedAt = new Date().toISOString();
      const entry = { version, score, promotedAt };
      const active: ActivePrompt = { runId, ...entry, history: [...(current?.history ?? []), entry] };
      await store.putJson(key, active);
      return active;
    },
  };
}
