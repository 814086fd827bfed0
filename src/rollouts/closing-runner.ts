import type { GatewayAdminClient } from '../gateway/admin-client.js';
import type { RolloutRunner } from './spec.js';

/**
 * Wraps a runner so each attempt ends by closing its gateway token (which waits until every span is in the object
 * store) and so an attempt whose model calls failed on the model side counts as infra_failed, whatever the agent
 * did with the error: it is retried as a new attempt and never trained on or scored as the agent's failure. So does an
 * attempt killed for its timeout while one model call had held it for half of that timeout or more.
 */
/** The share of an attempt's timeout one model call must have held it for its timeout to count as the engine's. */
export const ENGINE_HELD_FRACTION = 0.5;

export function closingRunner(inner: RolloutRunner, gateway: Pick<GatewayAdminClient, 'close'>): RolloutRunner {
  return {
    async run(spec, signal, options) {
      let result;
      try {
        result = await inner.run(spec, signal, options);
      } catch (err) {
        // A cancelled or failed attempt is abandoned: its token must not stay open for whatever it left behind.
        await gateway.close(spec.gateway.token).catch(() => undefined);
        throw err;
      }
      const closed = await gateway.close(spec.gateway.token);
      if (closed.upstreamFailures > 0) {
        // Kept on the result: the next attempt then serves the policy again (the model server may have restarted).
        result = { ...result, upstreamFailures: closed.upstreamFailures };
        if (result.outcome !== 'infra_failed') {
          return {
            ...result,
            outcome: 'infra_failed',
            detail: `${closed.upstreamFailures} model call(s) failed upstream (the agent then ${result.outcome})`,
          };
        }
      }
      // Killed for its timeout while the model held one call for at least half of it: the engine, not the agent, spent
      // the time (an overloaded model server), so the attempt is retried, not trained on as the agent's zero. An agent
      // that loops over many calls, or works long between them, stays timed_out.
      const held = closed.abandonedCallMs ?? 0;
      if (result.outcome === 'timed_out' && held >= spec.timeoutMs * ENGINE_HELD_FRACTION)
        return {
          ...result,
          outcome: 'infra_failed',
          detail: `timed out after ${spec.timeoutMs} ms while the model held its call for ${held} ms (the engine is too slow for the timeout)`,
        };
      // An agent that ran out of its budget failed, whatever it did next: the detail starts with the reason `budget`.
      if (closed.budgetExceeded && result.outcome !== 'infra_failed')
        return { ...result, outcome: 'agent_failed', detail: `budget: ${closed.budgetExceeded}` };
      return result;
    },
  };
}
