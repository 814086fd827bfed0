import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keys } from '../../storage/keys.js';
import { bearerCheck } from './bearer.js';
import { countSpans } from '../../storage/spans.js';
import { GatewayError, gatewayErrors } from './openai-error.js';
import { attachOverlay, overlayForRegistration, type PromptOverlayCache } from '../upstream/overlay-cache.js';
import type { InFlight } from '../registry/in-flight.js';
import type { PauseGate } from '../registry/pause-gate.js';
import { registerRolloutSchema, type Rollout } from '../registry/rollout-registry.js';
import type { RolloutTokens } from '../registry/rollout-tokens.js';
import { unavailable, type SharedRollouts } from '../registry/shared-rollouts.js';
import type { SpanUploader } from '../recording/uploader.js';
import type { GatewayStore } from '../store.js';
import { parseBody } from './request-schema.js';

type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

export interface AdminRouteDeps {
  adminKey: string;
  /** Base of the URLs handed to agents; '' means the scheme and host the admin client used. */
  publicUrl: string;
  rollouts: RolloutTokens;
  /** A registration's prompt overlay is looked up before the rollout exists. */
  overlays: PromptOverlayCache;
  /** Close and drain wait for the calls in flight, then for the uploader to put their spans in the store. */
  inFlight: InFlight;
  uploader: SpanUploader;
  /** Close counts the rollout's spans in the object store. */
  store: GatewayStore;
  gate: PauseGate;
}

/** Operator/pipeline API under /admin, behind the admin bearer key. */
export function registerAdminRoutes(app: FastifyInstance, deps: AdminRouteDeps): void {
  const { rollouts, inFlight, uploader, gate } = deps;
  const authorised = bearerCheck([deps.adminKey]);

  void app.register(async (admin) => {
    admin.addHook('onRequest', async (request) => {
      if (!authorised(request.headers.authorization)) throw gatewayErrors.badAdminKey();
    });

    admin.post('/admin/rollouts', async (request, reply) => {
      const input = parseBody(registerRolloutSchema, request.body);
      // Resolved before the rollout exists, so a missing overlay leaves no record and calls never wait on the store.
      const overlay = await overlayForRegistration(deps.overlays, input);
      const { rollout, created } = await rollouts.register(input);
      if (rollout.record.status === 'closed' || rollout.closeRequested) {
        throw new GatewayError(409, 'this rollout attempt was already closed; register a new attempt', {
          code: 'rollout_closed',
        });
      }
      attachOverlay(rollout, overlay);
      const base = deps.publicUrl || `${request.protocol}://${request.host}`;
      return reply
        .code(created ? 201 : 200)
        .send({ token: rollout.record.token, baseUrl: `${base}/r/${rollout.record.token}/v1`, created });
    });

    admin.get('/admin/rollouts/:token', async (request: TokenRequest) =>
      describe(await find(rollouts, request.params.token)),
    );

    admin.post('/admin/rollouts/:token/close', async (request: TokenRequest) => {
      const rollout = await find(rollouts, request.params.token);
      const token = rollout.record.token;
      // budgetExceeded only when a call was refused for the budget, so the answer stays what older clients expect.
      const verdict = () => ({
        upstreamFailures: rollout.record.upstreamFailures,
        ...(rollout.record.budgetExceeded && { budgetExceeded: rollout.record.budgetExceeded }),
        ...(rollout.record.abandonedCallMs > 0 && { abandonedCallMs: rollout.record.abandonedCallMs }),
      });
      if (rollout.record.status === 'closed') return { spans: rollout.record.spans ?? 0, ...verdict() };
      rollouts.closing.add(token);
      try {
        await inFlight.rolloutIdle(rollout);
        await uploader.flush(keys.spans(rollout.ref));
        if (rollouts.shared) return await closeShared(rollouts, rollouts.shared, rollout);
        const spans = await countSpans(deps.store, rollout.ref);
        await rollouts.registry.markClosed(rollout, spans);
        return { spans, ...verdict() };
      } finally {
        rollouts.closing.delete(token);
      }
    });

    admin.post('/admin/pause', async () => {
      gate.pause();
      return { paused: true };
    });
    admin.post('/admin/resume', async () => {
      gate.resume();
      return { paused: false };
    });
    // Drain stops new calls (they wait, then get 429), lets the running ones finish, and uploads every span.
    admin.post('/admin/drain', async () => {
      gate.pause();
      await inFlight.allIdle();
      await uploader.flush();
      return { paused: true, inFlight: inFlight.count, pendingUploads: uploader.pendingCount };
    });
  });
}

/** Replicas: every replica's spans and counts of the attempt, then the closed record for all of them. */
async function closeShared(rollouts: RolloutTokens, shared: SharedRollouts, rollout: Rollout) {
  const verdict = await shared
    .close(rollout)
    .catch((err: unknown) =>
      Promise.reject(err instanceof GatewayError ? err : unavailable('cannot close the rollout', err)),
    );
  rollout.record.upstreamFailures = verdict.upstreamFailures;
  rollout.record.budgetExceeded = verdict.budgetExceeded;
  rollout.record.abandonedCallMs = verdict.abandonedCallMs;
  await rollouts.registry.markClosed(rollout, verdict.spans);
  await shared
    .publishClosed(rollout)
    .catch((err: unknown) => Promise.reject(unavailable('cannot close the rollout', err)));
  return {
    spans: verdict.spans,
    upstreamFailures: verdict.upstreamFailures,
    ...(verdict.budgetExceeded && { budgetExceeded: verdict.budgetExceeded }),
    ...(verdict.abandonedCallMs > 0 && { abandonedCallMs: verdict.abandonedCallMs }),
    ...(verdict.missingSpans.length > 0 && { missingSpans: verdict.missingSpans }),
  };
}

async function find(rollouts: RolloutTokens, token: string): Promise<Rollout> {
  const rollout = await rollouts.find(token);
  if (!rollout) throw new GatewayError(404, 'no rollout with this token', { code: 'rollout_not_found' });
  return rollout;
}

function describe(rollout: Rollout) {
  const { token: _token, ...record } = rollout.record;
  return { ...record, inFlight: rollout.inFlight, nextSeq: rollout.nextSeq };
}
