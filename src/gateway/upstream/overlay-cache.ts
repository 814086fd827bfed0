import type { FastifyBaseLogger } from 'fastify';
import type { PromptOverlay } from '../../contracts/prompt-overlay.js';
import { createPromptOverlayStore, type PromptOverlayStore } from '../../storage/prompt-overlays.js';
import { GatewayError } from '../routes/openai-error.js';
import type { RegisterRollout, Rollout, RolloutRegistry } from '../registry/rollout-registry.js';
import type { GatewayStore } from '../store.js';

/** Overlays by run and version. They are written once and never change, so a found one is cached for good. */
export class PromptOverlayCache {
  private readonly overlays: PromptOverlayStore;
  private readonly found = new Map<string, PromptOverlay>();
  private readonly loading = new Map<string, Promise<PromptOverlay | null>>();

  constructor(
    store: GatewayStore,
    private readonly maxEntries = 512,
  ) {
    this.overlays = createPromptOverlayStore(store);
  }

  /** null when the version was never written (not cached: it may be written later). */
  async get(runId: string, version: number): Promise<PromptOverlay | null> {
    const key = `${runId}\n${version}`;
    const hit = this.found.get(key);
    if (hit) return hit;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = this.overlays.get(runId, version).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    const overlay = await pending;
    if (overlay) {
      // Oldest first out: a long-lived gateway serves many runs, each with a few dozen overlays at most.
      if (this.found.size >= this.maxEntries) this.found.delete(this.found.keys().next().value!);
      this.found.set(key, overlay);
    }
    return overlay;
  }
}

/** The overlay a registration asks for (none for null or version 0); a version never written is a 404. */
export async function overlayForRegistration(
  overlays: PromptOverlayCache,
  input: RegisterRollout,
): Promise<PromptOverlay | null> {
  const version = input.promptOverlay?.version ?? 0;
  if (version === 0) return null;
  const overlay = await overlays.get(input.runId, version);
  if (!overlay) {
    throw new GatewayError(404, `run ${input.runId} has no prompt overlay version ${version}`, {
      code: 'overlay_not_found',
      param: 'promptOverlay.version',
    });
  }
  return overlay;
}

/** A rollout's calls read overlays from the cache; one that cannot be loaded is a model-side failure of the attempt. */
export interface RolloutOverlayDeps {
  overlays: PromptOverlayCache;
  registry: RolloutRegistry;
  log: FastifyBaseLogger;
}

/**
 * The overlay of a rollout's calls: resolved at registration, so this is a field read on the hot path; only the
 * first call after a gateway restart (the registry reloads records, not overlays) reads the store.
 */
export async function loadRolloutOverlay(deps: RolloutOverlayDeps, rollout: Rollout): Promise<PromptOverlay | null> {
  const version = rollout.record.promptOverlay?.version ?? 0;
  if (version === 0) return (rollout.overlay = null);
  let overlay: PromptOverlay | null;
  try {
    overlay = await deps.overlays.get(rollout.record.runId, version);
  } catch (err) {
    deps.log.warn({ err }, 'prompt overlay could not be loaded');
    overlay = null;
  }
  if (!overlay) {
    // Serving the call without its overlay would record a wrong experiment; the attempt is an infra failure instead.
    await deps.registry.noteUpstreamFailure(rollout);
    throw new GatewayError(
      503,
      `prompt overlay version ${version} of run ${rollout.record.runId} could not be loaded`,
      {
        type: 'api_error',
        code: 'overlay_unavailable',
      },
    );
  }
  return (rollout.overlay = overlay);
}

/** A repeated registration must ask for the overlay the attempt already runs under; the first one sets it. */
export function attachOverlay(rollout: Rollout, overlay: PromptOverlay | null): void {
  const registered = rollout.record.promptOverlay?.version ?? 0;
  if (registered !== (overlay?.version ?? 0)) {
    throw new GatewayError(409, `this rollout attempt is registered with prompt overlay version ${registered}`, {
      code: 'rollout_conflict',
      param: 'promptOverlay.version',
    });
  }
  rollout.overlay ??= overlay;
}
