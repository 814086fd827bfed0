import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClientLink } from '../routes/client-link.js';
import { upstreamBody } from '../upstream/extensions.js';
import { GatewayError } from '../routes/openai-error.js';
import { applyPromptOverlay } from '../upstream/prompt-overlay.js';
import { loadRolloutOverlay, type RolloutOverlayDeps } from '../upstream/overlay-cache.js';
import type { Upstream } from '../upstream/model-client.js';
import type { Rollout } from '../registry/rollout-registry.js';
import { messagesToChat, parseMessagesRequest } from './messages-request.js';
import { checkPresentedKey } from './translated-call.js';

/**
 * `POST /v1/messages/count_tokens`: the prompt as the engine renders it (its chat template and tokenizer, the rollout's
 * overlay applied), counted by asking the engine for one token. Not recorded: no text reaches the agent.
 */
export function countTokensRoute(
  deps: RolloutOverlayDeps & { upstream: Upstream },
  openRollout: (token: string) => Promise<Rollout>,
) {
  return async (request: FastifyRequest<{ Params: { token: string } }>, reply: FastifyReply) => {
    const rollout = await openRollout(request.params.token);
    checkPresentedKey(request.headers, request.params.token);
    const body =
      request.body !== null && typeof request.body === 'object' && !Array.isArray(request.body)
        ? { ...request.body, max_tokens: 1, stream: false }
        : request.body;
    const chat = messagesToChat(parseMessagesRequest(body)) as unknown as Record<string, unknown>;
    const overlay = rollout.overlay === undefined ? await loadRolloutOverlay(deps, rollout) : rollout.overlay;
    const sent = applyPromptOverlay(
      upstreamBody(chat, 'chat.completions', rollout.record.policyModel, null),
      'chat.completions',
      overlay,
    );
    let res;
    try {
      res = await deps.upstream.postBuffered('/v1/chat/completions', JSON.stringify(sent), new ClientLink(reply.raw));
    } catch (err) {
      throw new GatewayError(502, `upstream unreachable: ${(err as Error).message}`, {
        type: 'upstream_error',
        code: 'upstream_unreachable',
      });
    }
    const tokens = res.statusCode === 200 ? promptTokens(res.text) : undefined;
    if (typeof tokens === 'number') return { input_tokens: tokens };
    // The engine refusing the prompt (too long, bad tools) is the agent's fault; anything else is the model side's.
    const agentFault =
      res.statusCode >= 400 && res.statusCode < 500 && res.statusCode !== 404 && res.statusCode !== 429;
    throw new GatewayError(
      agentFault ? 400 : 502,
      `upstream ${res.statusCode}: could not count the prompt's tokens: ${res.text.slice(0, 300)}`,
      { type: agentFault ? 'invalid_request_error' : 'upstream_error', code: 'upstream_rejected' },
    );
  };
}

function promptTokens(text: string): unknown {
  try {
    return (JSON.parse(text) as { usage?: { prompt_tokens?: unknown } }).usage?.prompt_tokens;
  } catch {
    return undefined;
  }
}
