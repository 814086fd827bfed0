import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keys } from '../../storage/keys.js';
import { bearerCheck } from './bearer.js';
import { countSpans } from '../../storage/spans.js';
import type { GatewayCore } from '../gateway-core.js';
import { GatewayError, gatewayErrors } from './openai-error.js';
import { attachOverlay, overlayForRegistration } from '../upstream/overlay-cache.js';
import { registerRolloutSchema, type Rollout } from '../registry/rollout-registry.js';
import { unavailable } from '../registry/shared-rollouts.js';
import { parseBody } from './request-schema.js';

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

/** Operator/pipeline API under /admin, behind the admin bearer key. */
export function registerAdminRoutes(app: FastifyInstance, core: GatewayCore): void {
  const authorised = bearerCheck([core.opts.adminKey]);

  void app.register(async (admin) => {
    admin.addHook('onRequest', async (request) => {
      if (!authorised(request.headers.authorization)) throw gatewayErrors.badAdminKey();
    });

    admin.post('/admin/rollouts', async (request, reply) => {
      const input = parseBody(registerRolloutSchema, request.body);
      // Resolved before the rollout exists, so a missing overlay leaves no record and calls never wait on the store.
      const overlay = await overlayForRegistration(core, input);
      const { rollout, created } = core.shared
        ? await core.shared.register(input)
        : await core.registry.register(input);
      if (rollout.record.status === 'closed' || rollout.closeRequested) {
        throw new GatewayError(409, 'this rollout attempt was already closed; register a new attempt', {
          code: 'rollout_closed',
        });
      }
      attachOverlay(rollout, overlay);
      const base = core.opts.publicUrl || `${request.protocol}://${request.host}`;
      return reply
        .code(created ? 201 : 200)
        .send({ token: rollout.record.token, baseUrl: `${base}/r/${rollout.record.token}/v1`, created });
    });

    admin.get('/admin/rollouts/:token', async (request: TokenRequest) =>
      describe(await find(core, request.params.token)),
    );

    admin.post('/admin/rollouts/:token/close', async (request: TokenRequest) => {
      const rollout = await find(core, request.params.token);
      const token = rollout.record.token;
      // budgetExceeded only when a call was refused for the budget, so the answer stays what older clients expect.
      const verdict = () => ({
        upstreamFailures: rollout.record.upstreamFailures,
        ...(rollout.record.budgetExceeded && { budgetExceeded: rollout.record.budgetExceeded }),
      });
      if (rollout.record.status === 'closed') return { spans: rollout.record.spans ?? 0, ...verdict() };
      core.closing.add(token);
      try {
        await core.inFlight.rolloutIdle(rollout);
        await core.uploader.flush(keys.spans(rollout.ref));
        if (core.shared) return await closeShared(core, rollout);
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

/** Replicas: every replica's spans and counts of the attempt, then the closed record for all of them. */
async function closeShared(core: GatewayCore, rollout: Rollout) {
  const verdict = await core
    .shared!.close(rollout)
    .catch((err: unknown) =>
      Promise.reject(err instanceof GatewayError ? err : unavailable('cannot close the rollout', err)),
    );
  rollout.record.upstreamFailures = verdict.upstreamFailures;
  rollout.record.budgetExceeded = verdict.budgetExceeded;
  await core.registry.markClosed(rollout, verdict.spans);
  await core
    .shared!.publishClosed(rollout)
    .catch((err: unknown) => Promise.reject(unavailable('cannot close the rollout', err)));
  return {
    spans: verdict.spans,
    upstreamFailures: verdict.upstreamFailures,
    ...(verdict.budgetExceeded && { budgetExceeded: verdict.budgetExceeded }),
    ...(verdict.missingSpans.length > 0 && { missingSpans: verdict.missingSpans }),
  };
}

async function find(core: GatewayCore, token: string): Promise<Rollout> {
  const rollout = core.shared ? await core.shared.resolve(token) : core.registry.get(token);
  if (!rollout) throw new GatewayError(404, 'no rollout with this token', { code: 'rollout_not_found' });
  return rollout;
}

function describe(rollout: Rollout) {
  const { token: _token, ...record } = rollout.record;
  return { ...record, inFlight: rollout.inFlight, nextSeq: rollout.nextSeq };
}
