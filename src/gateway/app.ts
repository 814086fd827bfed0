import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { keys } from '../storage/keys.js';
import { parseSpanKey } from '../storage/spans.js';
import { createGatewayMetrics } from './metrics.js';
import { CallRecorder, type Durability } from './recording/call-recorder.js';
import { UploadEncoder } from './recording/upload-encoder.js';
import { SpanUploader } from './recording/uploader.js';
import { WriteAheadLog, type WalSync } from './recording/wal.js';
import { InFlight } from './registry/in-flight.js';
import { PauseGate } from './registry/pause-gate.js';
import { RolloutRegistry } from './registry/rollout-registry.js';
import { RolloutTokens } from './registry/rollout-tokens.js';
import { SeqClaims } from './registry/seq-claims.js';
import { SharedRollouts } from './registry/shared-rollouts.js';
import { rebuildUsage } from './registry/usage-rebuild.js';
import { registerAdminRoutes } from './routes/admin-routes.js';
import { registerAgentRoutes } from './routes/agent-routes.js';
import { bearerCheck } from './routes/bearer.js';
import { registerErrorHandling } from './routes/error-handling.js';
import { gatewayErrors } from './routes/openai-error.js';
import { listKeys, type GatewayStore } from './store.js';
import { Upstream, type UpstreamOptions } from './upstream/model-client.js';
import { PromptOverlayCache } from './upstream/overlay-cache.js';
import { TeacherUpstreams } from './upstream/teacher.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** A JSON body's text as received (null for other bodies): see keepRequestText. */
    jsonText: string | null;
  }
}

export interface GatewayDeps {
  store: GatewayStore;
  /** Registry and WAL live under `<dataDir>/gateway/`. */
  dataDir: string;
  modelServerUrl: string;
  adminKey: string;
  /** Base of the URLs handed to agents; defaults to the scheme and host the admin client used. */
  publicUrl?: string;
  bodyLimit?: number;
  durability?: Durability;
  /** When a WAL append counts as durable (see WalSync); 'write' unless set. */
  walSync?: WalSync;
  /** 'write' mode: most milliseconds before a written span is fdatasync'd (WalOptions.syncIntervalMs). */
  walSyncIntervalMs?: number;
  pauseWaitMs?: number;
  pauseRetryAfterS?: number;
  upstream?: UpstreamOptions;
  /** Where teachers' API keys are read from (run config `teacher.apiKeyEnv`); default process.env. */
  env?: Readonly<Record<string, string | undefined>>;
  uploadConcurrency?: number;
  /** Build and compress spans for upload on a worker thread (default), not on the event loop the calls use. */
  encoderWorker?: boolean;
  /** Bytes of spans whose upload may wait while calls are in flight (UploaderOptions.maxDeferredBytes); 0 = none. */
  uploadDeferBytes?: number;
  logger?: FastifyServerOptions['logger'];
  /**
   * Set when this gateway is one of several replicas on one object store (VOLT_GATEWAY_REPLICA_ID): rollouts are
   * registered in the store and seqs claimed there (registry/shared-rollouts.ts, registry/seq-claims.ts). Unset: one
   * gateway, local.
   */
  replicaId?: string;
  /** Replicas: how stale a replica's view of a rollout's status may be (SharedOptions.statusTtlMs). */
  statusTtlMs?: number;
  /** Replicas: how long close waits for spans other replicas numbered (SharedOptions.closeWaitMs). */
  closeWaitMs?: number;
  /** Bearer key /metrics asks for (the admin key also works); null/unset: /metrics is open (loopback only). */
  metricsKey?: string | null;
}

/**
 * JSON bodies are parsed by fastify's own parser (same errors, same prototype-poisoning checks), and their text is
 * kept as `request.jsonText`: the call record stores the agent's request as it came instead of serialising it again.
 */
function keepRequestText(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.decorateRequest('jsonText', null);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    // The parser skips a byte order mark; the text kept must be the JSON it parsed, so it does too.
    request.jsonText = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    void parse(request, text, done);
  });
}

/**
 * The gateway app: loads the rollout registry, replays the WAL (uploading what a crashed process left), and
 * registers the agent, admin and ops routes. The caller listens and closes it.
 */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = Fastify({ logger: deps.logger ?? false, bodyLimit: deps.bodyLimit ?? 16 * 1024 * 1024 });
  keepRequestText(app);
  const root = path.join(deps.dataDir, 'gateway');
  const registry = new RolloutRegistry(path.join(root, 'rollouts.json'));
  const wal = new WriteAheadLog(path.join(root, 'wal'), {
    sync: deps.walSync ?? 'write',
    syncIntervalMs: deps.walSyncIntervalMs,
    onSyncError: (err) =>
      app.log.error({ err }, 'background WAL fdatasync failed; spans survive a process kill but not an OS crash'),
  });
  const inFlight = new InFlight();
  const encoder = new UploadEncoder({ worker: deps.encoderWorker ?? true });
  const uploader = new SpanUploader(deps.store, wal, {
    concurrency: deps.uploadConcurrency,
    maxDeferredBytes: deps.uploadDeferBytes ?? 0,
    idleForMs: () => inFlight.idleForMs(),
    log: (msg, err) => app.log.warn({ err }, msg),
    encoder,
    onUploaded: (bytes, lags, spanBytes) => {
      metrics.uploadedBytes.inc(bytes);
      metrics.spanBytes.inc(spanBytes);
      for (const lag of lags) metrics.uploadLag.observe(lag);
    },
  });
  const metrics = createGatewayMetrics({
    pendingUploads: () => uploader.pendingCount,
    walBytes: () => wal.bytes,
    inFlight: () => inFlight.count,
  });
  const upstream = new Upstream(deps.modelServerUrl, {
    ...deps.upstream,
    onRetry: (kind) => metrics.upstreamErrors.inc({ kind: `retry_${kind}` }),
  });
  const teachers = new TeacherUpstreams(deps.env ?? process.env, {
    ...deps.upstream,
    onRetry: (kind) => metrics.upstreamErrors.inc({ kind: `teacher_retry_${kind}` }),
  });
  const log = (msg: string, err: unknown) => app.log.warn({ err }, msg);
  const rollouts = new RolloutTokens(
    registry,
    deps.replicaId
      ? new SharedRollouts(deps.store, registry, {
          replicaId: deps.replicaId,
          statusTtlMs: deps.statusTtlMs,
          closeWaitMs: deps.closeWaitMs,
          log,
        })
      : null,
  );
  // Each call's record: durable in the WAL before the agent gets its answer, then put in the store by the uploader.
  const recorder = new CallRecorder({
    wal,
    uploader,
    store: deps.store,
    metrics,
    inFlight,
    durability: deps.durability ?? 'wal',
  });
  const overlays = new PromptOverlayCache(deps.store);
  const gate = new PauseGate();

  const loaded = await registry.load();
  const replay = await wal.open();
  for (const entry of replay) uploader.enqueue(entry);
  await Promise.all(
    loaded
      .filter((r) => r.record.status === 'open')
      .map(async (r) => {
        // Continue numbering after every span this rollout already has, in the WAL or in the store.
        const prefix = keys.spans(r.ref);
        const known = [
          ...replay.map((e) => e.key).filter((k) => k.startsWith(prefix)),
          ...(await listKeys(deps.store, prefix)),
        ];
        r.nextSeq = known.reduce((max, k) => Math.max(max, (parseSpanKey(k)?.last ?? -1) + 1), 0);
        // Budgets count per replica, and a replica cannot tell its spans from the others' in the store: lone gateway only.
        if (!deps.replicaId) {
          await rebuildUsage(r, replay, deps.store).catch((err: unknown) =>
            app.log.error({ err }, `could not rebuild the budget usage of ${prefix}; keeping the registry's`),
          );
        }
      }),
  );

  registerErrorHandling(app, metrics);
  registerAdminRoutes(app, {
    adminKey: deps.adminKey,
    publicUrl: deps.publicUrl ?? '',
    rollouts,
    overlays,
    inFlight,
    uploader,
    store: deps.store,
    gate,
  });
  registerAgentRoutes(app, {
    rollouts,
    gate,
    pause: { waitMs: deps.pauseWaitMs ?? 10_000, retryAfterS: deps.pauseRetryAfterS ?? 5 },
    inFlight,
    overlays,
    seqs: deps.replicaId ? new SeqClaims(deps.store, deps.replicaId) : null,
    // A call goes to the model server, then its record to the recorder; model-side failures to the registry too.
    relay: { upstream, teachers, recorder, metrics, registry, log: app.log },
    store: deps.store,
    log: app.log,
  });
  app.get('/healthz', async () => ({
    ok: true,
    paused: gate.paused,
    inFlight: inFlight.count,
    pendingUploads: uploader.pendingCount,
  }));
  const metricsAllowed = bearerCheck([deps.metricsKey, deps.metricsKey ? deps.adminKey : null]);
  app.get('/metrics', async (request, reply) => {
    if (!metricsAllowed(request.headers.authorization)) throw gatewayErrors.badMetricsKey();
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.addHook('onClose', async () => {
    await inFlight.allIdle();
    await Promise.race([uploader.flush(), new Promise((r) => setTimeout(r, 10_000).unref())]);
    uploader.stop();
    await encoder.close();
    await wal.close();
    await upstream.close();
    await teachers.close();
  });
  return app;
}
