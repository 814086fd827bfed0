import { gatewayErrors } from '../routes/openai-error.js';
import type { RegisterRollout, Rollout, RolloutRegistry } from './rollout-registry.js';
import type { SharedRollouts } from './shared-rollouts.js';

/**
 * The rollouts this gateway serves, by token: its own registry, or, when gateway replicas share rollouts through the
 * object store, the shared view (shared-rollouts.ts) that keeps that registry as its local cache.
 */
export class RolloutTokens {
  /** Tokens being closed: new calls are refused while close waits for the ones in flight. */
  readonly closing = new Set<string>();

  constructor(
    readonly registry: RolloutRegistry,
    /** Set when replicas share rollouts and seqs through the object store; null for a lone gateway. */
    readonly shared: SharedRollouts | null,
  ) {}

  /** The rollout of a token, open or closed; undefined when no attempt has it. */
  async find(token: string): Promise<Rollout | undefined> {
    return this.shared ? await this.shared.resolve(token) : this.registry.get(token);
  }

  /** The rollout a token opens for calls: an unknown, closed or closing one is refused (401). */
  async open(token: string): Promise<Rollout> {
    const rollout = this.shared ? await this.shared.resolve(token) : this.registry.get(token);
    if (!rollout || rollout.record.status !== 'open' || rollout.closeRequested || this.closing.has(token))
      throw gatewayErrors.unknownToken();
    return rollout;
  }

  /** Idempotent per attempt, across replicas too: a registered attempt keeps its token. */
  register(input: RegisterRollout): Promise<{ rollout: Rollout; created: boolean }> {
    return this.shared ? this.shared.register(input) : this.registry.register(input);
  }
}
