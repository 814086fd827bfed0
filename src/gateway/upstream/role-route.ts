import type { IncomingHttpHeaders } from 'node:http';
import { requestedModelOf } from '../../contracts/call-kind.js';
import { roleOf } from '../../contracts/team.js';
import type { RolloutRecord } from '../registry/rollout-registry.js';
import { GatewayError } from '../routes/openai-error.js';

/** Which policy serves a call: the role it was recognised as (null: none), the model server's name for it. */
export interface RoutedCall {
  role: string | null;
  model: string;
  /** The run's trained policy serves it (a warm start's teacher serves only these). */
  trained: boolean;
}

/**
 * A call's role and model (run config `team`, registered with the rollout): the first role it matches, else the
 * rollout's `unmatched` rule. `agentBody` is the request as the agent sent it (its `model`), `chat` the same request
 * in chat-completions shape (its system messages, whatever API the agent spoke).
 */
export function routeByRole(
  record: RolloutRecord,
  agentBody: unknown,
  chat: unknown,
  headers: IncomingHttpHeaders,
): RoutedCall {
  const team = record.team;
  if (!team) return { role: null, model: record.policyModel, trained: true };
  const requestedModel = requestedModelOf(agentBody);
  const role = roleOf(team.roles, { requestedModel, body: chat, headers });
  if (role) return { role: role.name, model: role.model, trained: role.trained };
  if (team.unmatched === 'refuse')
    throw new GatewayError(
      400,
      `no role of this run matches this call (model ${JSON.stringify(requestedModel)}); roles: ${team.roles
        .map((r) => r.name)
        .join(', ')}. The run config's team.unmatched is "refuse"`,
      { code: 'no_matching_role', param: 'model' },
    );
  return { role: null, model: team.unmatched.model, trained: false };
}
