import type { GatewayAdminClient } from '../gateway/admin-client.js';
import type { RolloutRunner } from './spec.js';

/**
 * Wraps a runner so each attempt ends by closing its gateway token (which waits until every span is in the object
 * store) and so an attempt whose model calls failed on the model side counts as infra_failed, whatever the agent
 * did with the error: it is retried as a new attempt and never trained on or scored as the agent's failure.
 */
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
      // An agent that ran out of its budget failed, whatever it did next: the detail starts with the reason `budget`.
      if (closed.budgetExceeded && result.outcome !== 'infra_failed')
        return { ...result, outcome: 'agent_failed', detail: `budget: ${closed.budgetExceeded}` };
      return result;
    },
  };
}
