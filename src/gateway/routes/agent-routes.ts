import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
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
import type { HostedTools } from '../../contracts/hosted-tools.js';
import { ClientLink } from './client-link.js';
import { askedBy, upstreamBody } from '../upstream/extensions.js';
import { teacherBody } from '../upstream/teacher.js';
import { GatewayError, gatewayErrors } from './openai-error.js';
import { applyPromptOverlay } from '../upstream/prompt-overlay.js';
import { loadRolloutOverlay } from '../upstream/overlay-cache.js';
import { relayJson, relayStream, type RelayDeps } from './relay.js';
import { routeByRole } from '../upstream/role-route.js';
import type { InFlight } from '../registry/in-flight.js';
import type { PauseGate } from '../registry/pause-gate.js';
import type { Rollout, RolloutRegistry } from '../registry/rollout-registry.js';
import type { RolloutTokens } from '../registry/rollout-tokens.js';
import type { SeqClaims } from '../registry/seq-claims.js';
import type { GatewayStore } from '../store.js';
import type { PromptOverlayCache } from '../upstream/overlay-cache.js';
import { chatRequestSchema, completionRequestSchema, parseBody, rewardSchema } from './request-schema.js';
import { redactHeaders } from '../recording/call-context.js';
import { agentRewardsFileSchema } from '../../contracts/rewards.js';
import { parseRecord } from '../../storage/records.js';

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

export interface AgentRouteDeps {
  /** The open rollout a token names; its registry records budget refusals and model-side failures. */
  rollouts: RolloutTokens;
  /** While paused, a new call waits up to `pause.waitMs`, then is answered 429 with Retry-After `pause.retryAfterS`. */
  gate: PauseGate;
  pause: { waitMs: number; retryAfterS: number };
  /** Calls in flight, which close and drain wait for. */
  inFlight: InFlight;
  /** The prompt overlay a rollout's calls are sent under. */
  overlays: PromptOverlayCache;
  /** Replicas: each call's seq claimed in the object store; null: numbered by this process. */
  seqs: SeqClaims | null;
  /** Where a call goes: the model server, then the recorder. */
  relay: RelayDeps;
  /** The rewards an agent posts go straight to the object store. */
  store: GatewayStore;
  log: FastifyBaseLogger;
}

/** The agent-facing, OpenAI-compatible routes under `/r/<token>/`. */
export function registerAgentRoutes(app: FastifyInstance, deps: AgentRouteDeps): void {
  const { rollouts, gate, inFlight, relay, store } = deps;
  const openRollout = (token: string): Promise<Rollout> => rollouts.open(token);
  const overlayDeps = { overlays: deps.overlays, registry: rollouts.registry, log: deps.log };

  // `translate`: the agent speaks another API (Responses, Messages); the engine is asked in chat completions.
  const call =
    (
      endpoint: Span['endpoint'],
      schema: z.ZodType | null,
      translate?: (body: unknown, hosted: HostedTools) => TranslatedCall,
    ) =>
    async (request: TokenRequest, reply: FastifyReply) => {
      const opened = await openRollout(request.params.token);
      if (translate) checkPresentedKey(request.headers, request.params.token);
      const translated = translate?.(request.body, opened.record.hostedTools ?? 'drop');
      const body = translated ? translated.chat : (parseBody(schema!, request.body) as Record<string, unknown>);
      if (gate.paused && !(await gate.waitOpen(deps.pause.waitMs))) throw gatewayErrors.paused(deps.pause.retryAfterS);
      // Re-checked after the pause: the rollout may have been closed while this call waited.
      const rollout = await openRollout(request.params.token);
      // Before the budget counts the call: a call refused for matching no role was never made.
      const routed = routeByRole(rollout.record, request.body, body, request.headers);
      const translation = [...(translated?.translation ?? [])];
      const admitted = admitCall(rollout, body, translation);
      if (admitted.refused) await rollouts.registry.noteBudgetExceeded(rollout, admitted.refused);
      if (admitted.error) throw admitted.error;
      const link = new ClientLink(reply.raw);
      const callStart = performance.now();
      inFlight.begin(rollout);
      try {
        const overlay =
          rollout.overlay === undefined ? await loadRolloutOverlay(overlayDeps, rollout) : rollout.overlay;
        // A teacher (distillation) answers in its own tokens, so it is asked without the engine's extensions. It
        // serves the trained role's calls; a frozen role's stay the model server's.
        const { teacher: teacherRef, sampling } = rollout.record;
        const teacher = teacherRef && routed.trained ? relay.teachers.for(teacherRef) : undefined;
        const upstreamRequest = applyPromptOverlay(
          teacher ? teacherBody(body, teacher.model, sampling) : upstreamBody(body, endpoint, routed.model, sampling),
          endpoint,
          overlay,
        );
        const ctx = {
          rollout,
          seq: deps.seqs ? -1 : rollout.nextSeq++,
          // Claimed beside the upstream call rather than before it, so the claim's round trips hide behind the model.
          seqClaim: deps.seqs ? claimSeq(deps.seqs, rollout, rollouts.registry, deps.log) : undefined,
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
          translation,
          teacher,
          role: routed.role,
          model: routed.model,
        };
        // Awaited (and its failure answered) where the span is recorded; this only keeps a rejection from being unhandled.
        ctx.seqClaim?.catch(() => undefined);
        const asked = askedBy(body, endpoint);
        if (ctx.stream) return await relayStream(relay, ctx, asked, reply, request, link);
        return await relayJson(relay, ctx, asked, reply, link);
      } finally {
        // Noted before the call counts as ended, so a close waiting for the rollout's calls sees it.
        if (link.gone)
          await rollouts.registry
            .noteAbandonedCall(rollout, performance.now() - callStart)
            .catch((err: unknown) => deps.log.error({ err }, 'could not record an abandoned call'));
        inFlight.end(rollout);
      }
    };

  app.post('/r/:token/v1/chat/completions', call('chat.completions', chatRequestSchema));
  app.post('/r/:token/v1/completions', call('completions', completionRequestSchema));
  app.post('/r/:token/v1/responses', call('chat.completions', null, translateResponses));
  // Messages also without `/v1`: clients whose Anthropic base URL holds the version (the Vercel AI SDK reads
  // ANTHROPIC_BASE_URL as `…/v1`) append only `/messages` to the `<gateway>/r/<token>` the rollout contract sets.
  const countTokens = countTokensRoute({ ...overlayDeps, upstream: relay.upstream }, openRollout);
  for (const root of ['/r/:token/v1', '/r/:token']) {
    app.post(`${root}/messages`, call('chat.completions', null, translateMessages));
    app.post(`${root}/messages/count_tokens`, countTokens);
  }

  app.get('/r/:token/v1/models', async (request: TokenRequest) => {
    const { record } = await openRollout(request.params.token);
    const created = Math.floor(Date.parse(record.createdAt) / 1000);
    // With a team, the names its roles are asked by (a role's literal `model`) are listed too.
    const ids = [record.policyModel, ...(record.team?.roles ?? []).map((r) => r.match.model)].filter(
      (id, i, all): id is string => id !== undefined && !id.includes('*') && all.indexOf(id) === i,
    );
    return { object: 'list', data: ids.map((id) => ({ id, object: 'model', created, owned_by: 'volt' })) };
  });

  // Appends are serialised per rollout so two concurrent rewards never overwrite each other.
  const rewardChains = new Map<string, Promise<unknown>>();
  app.post('/r/:token/reward', async (request: TokenRequest) => {
    const rollout = await openRollout(request.params.token);
    const reward = parseBody(rewardSchema, request.body);
    const key = keys.agentRewards(rollout.ref);
    const append = async () => {
      const existing = await store.getJsonOrNull(key);
      // A corrupt file fails the post (500) rather than being overwritten: the rewards already posted are kept.
      const rewards = existing === null ? [] : parseRecord(key, agentRewardsFileSchema, existing).rewards;
      rewards.push({
        value: reward.value,
        name: reward.name ?? null,
        ...(reward.span !== undefined && { span: reward.span }),
        at: new Date().toISOString(),
      });
      await store.putJson(key, { rewards });
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
async function claimSeq(
  seqs: SeqClaims,
  rollout: Rollout,
  registry: RolloutRegistry,
  log: FastifyBaseLogger,
): Promise<number> {
  try {
    return await seqs.next(rollout);
  } catch (err) {
    log.error({ err }, 'could not claim a span seq');
    await registry
      .noteUpstreamFailure(rollout)
      .catch((e: unknown) => log.error({ err: e }, 'could not persist an upstream failure'));
    throw new GatewayError(
      503,
      `the gateway could not number this call: object store unreachable (${(err as Error).message})`,
      { type: 'api_error', code: 'seq_unavailable' },
    );
  }
}
