import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keys } from '../storage/keys.js';
import { countSpans } from '../storage/spans.js';
import type { GatewayCore } from './gateway-core.js';
import { GatewayError, gatewayErrors } from './openai-error.js';
import { attachOverlay, overlayForRegistration } from './prompt-overlay-cache.js';
import { registerRolloutSchema, type Rollout } from './registry.js';
import { parseBody } from './request-schema.js';

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

/** Operator/pipeline API under /admin, behind the admin bearer key. */
export function registerAdminRoutes(app: FastifyInstance, core: GatewayCore): void {
  const expected = Buffer.from(core.opts.adminKey);
  const authorised = (request: FastifyRequest) => {
    const given = Buffer.from(/^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  void app.register(async (admin) => {
    admin.addHook('onRequest', async (request) => {
      if (!authorised(request)) throw gatewayErrors.badAdminKey();
    });

    admin.post('/admin/rollouts', async (request, reply) => {
      const input = parseBody(registerRolloutSchema, request.body);
      // Resolved before the rollout exists, so a missing overlay leaves no record and calls never wait on the store.
      const overlay = await overlayForRegistration(core, input);
      const { rollout, created } = await core.registry.register(input);
      if (rollout.record.status === 'closed') {
        throw new GatewayError(409, 'this rollout attempt was already closed; register a new attempt', { code: 'rollout_closed' });
      }
      attachOverlay(rollout, overlay);
      const base = core.opts.publicUrl || `${request.protocol}://${request.host}`;
      return reply.code(created ? 201 : 200).send({ token: rollout.record.token, baseUrl: `${base}/r/${rollout.record.token}/v1`, created });
    });

    admin.get('/admin/rollouts/:token', async (request: TokenRequest) => describe(find(core, request.params.token)));

    admin.post('/admin/rollouts/:token/close', async (request: TokenRequest) => {
      const rollout = find(core, request.params.token);
      const token = rollout.record.token;
      // budgetExceeded only when a call was refused for the budget, so the answer stays what older clients expect.
      const verdict = () => ({ upstreamFailures: rollout.record.upstreamFailures, ...(rollout.record.budgetExceeded && { budgetExceeded: rollout.record.budgetExceeded }) });
      if (rollout.record.status === 'closed') return { spans: rollout.record.spans ?? 0, ...verdict() };
      core.closing.add(token);
      try {
        await core.inFlight.rolloutIdle(rollout);
        await core.uploader.flush(keys.spans(rollout.ref));
        const spans = await countSpans(core.store, rollout.ref);
        await core.registry.markClosed(rollout, spans);
        return { spans, ...verdict() };
      } finally {
        core.closing.delete(token);
      }
    });

    admin.post('/admin/pause', async () => {
      core.gate.pause();
      return { paused: true };
    });
    admin.post('/admin/resume', async () => {
      core.gate.resume();
      return { paused: false };
    });
    // Drain stops new calls (they wait, then get 429), lets the running ones finish, and uploads every span.
    admin.post('/admin/drain', async () => {
      core.gate.pause();
      await core.inFlight.allIdle();
      await core.uploader.flush();
      return { paused: true, inFlight: core.inFlight.count, pendingUploads: core.uploader.pendingCount };
    });
  });
}

function find(core: GatewayCore, token: string): Rollout {
  const rollout = core.registry.get(token);
  if (!rollout) throw new GatewayError(404, 'no rollout with this token', { code: 'rollout_not_found' });
  return rollout;
}

function describe(rollout: Rollout) {
  const { token: _token, ...record } = rollout.record;
  return { ...record, inFlight: rollout.inFlight, nextSeq: rollout.nextSeq };
}
