import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Span } from '../../contracts/span.js';
import { admitCall } from '../registry/budget.js';
import { keys } from '../../storage/keys.js';
import { countTokensRoute } from '../agent-apis/count-tokens.js';
import {
  checkPresentedKey,
  translateMessages,
  translateResponses,
  type TranslatedCall,
} from '../agent-apis/translated-call.js';
import { ClientLink } from './client-link.js';
import { askedBy, upstreamBody } from '../upstream/extensions.js';
import type { GatewayCore } from '../gateway-core.js';
import { GatewayError, gatewayErrors } from './openai-error.js';
import { applyPromptOverlay } from '../upstream/prompt-overlay.js';
import { loadRolloutOverlay } from '../upstream/overlay-cache.js';
import { relayJson, relayStream } from './relay.js';
import type { Rollout } from '../registry/rollout-registry.js';
import { chatRequestSchema, completionRequestSchema, parseBody, rewardSchema } from './request-schema.js';
import { redactHeaders } from '../recording/call-context.js';
import { agentRewardsFileSchema } from '../../contracts/rewards.js';
import { parseRecord } from '../../storage/records.js';

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

/** The agent-facing, OpenAI-compatible routes under `/r/<token>/`. */
export function registerProxyRoutes(app: FastifyInstance, core: GatewayCore): void {
  const openRollout = async (token: string): Promise<Rollout> => {
    const rollout = core.shared ? await core.shared.resolve(token) : core.registry.get(token);
    if (!rollout || rollout.record.status !== 'open' || rollout.closeRequested || core.closing.has(token))
      throw gatewayErrors.unknownToken();
    return rollout;
  };

  // `translate`: the agent speaks another API (Responses, Messages); the engine is asked in chat completions.
  const call =
    (endpoint: Span['endpoint'], schema: z.ZodType | null, translate?: (body: unknown) => TranslatedCall) =>
    async (request: TokenRequest, reply: FastifyReply) => {
      await openRollout(request.params.token);
      if (translate) checkPresentedKey(request.headers, request.params.token);
      const translated = translate?.(request.body);
      const body = translated ? translated.chat : (parseBody(schema!, request.body) as Record<string, unknown>);
      if (core.gate.paused && !(await core.gate.waitOpen(core.opts.pauseWaitMs)))
        throw gatewayErrors.paused(core.opts.pauseRetryAfterS);
      // Re-checked after the pause: the rollout may have been closed while this call waited.
      const rollout = await openRollout(request.params.token);
      const admitted = admitCall(rollout, body);
      if (admitted.refused) await core.registry.noteBudgetExceeded(rollout, admitted.refused);
      if (admitted.error) throw admitted.error;
      const link = new ClientLink(reply.raw);
      core.inFlight.begin(rollout);
      try {
        const overlay = rollout.overlay === undefined ? await loadRolloutOverlay(core, rollout) : rollout.overlay;
        const upstreamRequest = applyPromptOverlay(
          upstreamBody(body, endpoint, rollout.record.policyModel, rollout.record.sampling),
          endpoint,
          overlay,
        );
        const ctx = {
          rollout,
          seq: core.seqs ? -1 : rollout.nextSeq++,
          // Claimed beside the upstream call rather than before it, so the claim's round trips hide behind the model.
          seqClaim: core.seqs ? claimSeq(core, rollout) : undefined,
          endpoint,
          api: translated?.dialect.api ?? endpoint,
          dialect: translated?.dialect,
          stream: body.stream === true,
          startedAt: new Date(),
          startMs: performance.now(),
          request: { body: request.body, headers: redactHeaders(request.headers) },
          requestText: request.jsonText,
          upstreamRequest,
          upstreamText: JSON.stringify(upstreamRequest),
        };
        // Awaited (and its failure answered) where the span is recorded; this only keeps a rejection from being unhandled.
        ctx.seqClaim?.catch(() => undefined);
        const asked = askedBy(body, endpoint);
        if (ctx.stream) return await relayStream(core, ctx, asked, reply, request, link);
        return await relayJson(core, ctx, asked, reply, link);
      } finally {
        core.inFlight.end(rollout);
      }
    };

  app.post('/r/:token/v1/chat/completions', call('chat.completions', chatRequestSchema));
  app.post('/r/:token/v1/completions', call('completions', completionRequestSchema));
  app.post('/r/:token/v1/responses', call('chat.completions', null, translateResponses));
  app.post('/r/:token/v1/messages', call('chat.completions', null, translateMessages));
  app.post('/r/:token/v1/messages/count_tokens', countTokensRoute(core, openRollout));

  app.get('/r/:token/v1/models', async (request: TokenRequest) => {
    const { record } = await openRollout(request.params.token);
    const created = Math.floor(Date.parse(record.createdAt) / 1000);
    return { object: 'list', data: [{ id: record.policyModel, object: 'model', created, owned_by: 'volt' }] };
  });

  // Appends are serialised per rollout so two concurrent rewards never overwrite each other.
  const rewardChains = new Map<string, Promise<unknown>>();
  app.post('/r/:token/reward', async (request: TokenRequest) => {
    const rollout = await openRollout(request.params.token);
    const reward = parseBody(rewardSchema, request.body);
    const key = keys.agentRewards(rollout.ref);
    const append = async () => {
      const existing = await core.store.getJsonOrNull(key);
      // A corrupt file fails the post (500) rather than being overwritten: the rewards already posted are kept.
      const rewards = existing === null ? [] : parseRecord(key, agentRewardsFileSchema, existing).rewards;
      rewards.push({ value: reward.value, name: reward.name ?? null, at: new Date().toISOString() });
      await core.store.putJson(key, { rewards });
      return rewards.length;
    };
    const next = (rewardChains.get(key) ?? Promise.resolve()).then(append, append);
    rewardChains.set(
      key,
      next.catch(() => undefined),
    );
    return { ok: true, count: await next };
  });
}

/** Replicas: the call's seq, claimed in the object store; without one the call cannot be recorded, so it fails. */
async function claimSeq(core: GatewayCore, rollout: Rollout): Promise<number> {
  try {
    return await core.seqs!.next(rollout);
  } catch (err) {
    core.log.error({ err }, 'could not claim a span seq');
    await core.registry
      .noteUpstreamFailure(rollout)
      .catch((e: unknown) => core.log.error({ err: e }, 'could not persist an upstream failure'));
    throw new GatewayError(
      503,
      `the gateway could not number this call: object store unreachable (${(err as Error).message})`,
      { type: 'api_error', code: 'seq_unavailable' },
    );
  }
}
