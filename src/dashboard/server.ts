import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';
import { connectClient } from '../client/connect.js';
import type { VoltEnv } from '../config/env.js';
import { createObjectStore, type ObjectStore } from '../storage/object-store.js';
import { curveView, iterationView, listRuns, NotFoundError, rolloutView, runView } from './data.js';
import {
  errorPage,
  iterationPage,
  notFoundPage,
  rolloutPage,
  runPage,
  runsPage,
  type PageContext,
  type RolloutQuery,
} from './pages.js';

export interface DashboardOptions {
  client: Client;
  store: ObjectStore;
  pages: PageContext;
  /** Required of every request when set (bearer header, or `?token=` once, which sets a cookie). */
  token?: string;
}

const require = createRequire(import.meta.url);
const uplotDir = path.dirname(require.resolve('uplot/dist/uPlot.iife.min.js'));
/** The files under /assets: the chart library from node_modules and the dashboard's own script, nothing fetched. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'uPlot.iife.min.js': { file: path.join(uplotDir, 'uPlot.iife.min.js'), type: 'text/javascript; charset=utf-8' },
  'uPlot.min.css': { file: path.join(uplotDir, 'uPlot.min.css'), type: 'text/css; charset=utf-8' },
  'dashboard.js': {
    file: path.join(import.meta.dirname, 'assets', 'dashboard.js'),
    type: 'text/javascript; charset=utf-8',
  },
};

const rolloutQuerySchema = z.object({
  group: z.string().max(200).optional(),
  outcome: z.string().max(100).optional(),
  flag: z.string().max(100).optional(),
  sort: z.enum(['rollout', 'group', 'outcome', 'reward', 'flags', 'seconds', 'tokens']).default('rollout'),
  order: z.enum(['asc', 'desc']).default('asc'),
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
});

const COOKIE = 'volt_dashboard_token';

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function cookieToken(req: FastifyRequest): string | null {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === COOKIE) return decodeURIComponent(v.join('='));
  }
  return null;
}

const html = (reply: FastifyReply, status: number, body: string) =>
  reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body);

/** The read-only dashboard: pages over Temporal (runs, status) and the object store (rewards, spans, logs). */
export async function buildDashboard(o: DashboardOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, routerOptions: { maxParamLength: 500 } });

  app.addHook('onRequest', async (req, reply) => {
    if (!o.token || req.url === '/healthz') return;
    const header = req.headers.authorization?.replace(/^Bearer\s+/i, '') ?? null;
    const query = new URL(req.url, 'http://x').searchParams.get('token');
    const given = header ?? query ?? cookieToken(req);
    if (!given || !sameSecret(given, o.token)) {
      await html(reply, 401, errorPage('This dashboard needs its access token (VOLT_DASHBOARD_TOKEN): add ?token=…'));
      return reply;
    }
    if (query) reply.header('set-cookie', `${COOKIE}=${encodeURIComponent(query)}; HttpOnly; SameSite=Strict; Path=/`);
  });

  app.setNotFoundHandler((req, reply) => html(reply, 404, notFoundPage(`no page ${req.url}`)));
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof NotFoundError) return html(reply, 404, notFoundPage(err.message));
    if (err instanceof z.ZodError)
      return html(
        reply,
        400,
        errorPage(`bad query: ${err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`),
      );
    const { statusCode, message } = err as { statusCode?: number; message?: string };
    if (statusCode && statusCode >= 400 && statusCode < 500) return html(reply, statusCode, errorPage(String(message)));
    // Temporal or the object store not answering: the dashboard itself is fine, what it reads is not.
    return html(reply, 503, errorPage(`could not read the run's records: ${String(message)}`));
  });

  app.get('/healthz', async () => ({ ok: true }));
  app.get('/', async (_req, reply) => html(reply, 200, runsPage(await listRuns(o.client), o.pages)));
  app.get<{ Params: { runId: string } }>('/runs/:runId', async (req, reply) =>
    html(reply, 200, runPage(await runView(o.client, o.store, req.params.runId), o.pages)),
  );
  app.get<{ Params: { runId: string } }>('/api/runs/:runId/curve', async (req) =>
    curveView(o.client, o.store, req.params.runId),
  );
  type IterationParams = { runId: string; iteration: string; set?: string };
  const iterationRoute = async (req: FastifyRequest<{ Params: IterationParams }>, reply: FastifyReply) => {
    const query = rolloutQuerySchema.parse(req.query) as RolloutQuery;
    const { runId, iteration, set } = req.params;
    return html(reply, 200, iterationPage(await iterationView(o.store, runId, iteration, set), query));
  };
  const rolloutRoute = async (
    req: FastifyRequest<{ Params: IterationParams & { rolloutId: string } }>,
    reply: FastifyReply,
  ) => {
    const { runId, iteration, rolloutId, set } = req.params;
    return html(reply, 200, rolloutPage(await rolloutView(o.store, runId, iteration, rolloutId, set)));
  };
  // An iteration's training rollouts, and each of its evaluations' held-out rollouts (eval/<label>: base, candidate, …).
  app.get('/runs/:runId/iterations/:iteration', iterationRoute);
  app.get('/runs/:runId/iterations/:iteration/eval/:set', iterationRoute);
  app.get('/runs/:runId/iterations/:iteration/rollouts/:rolloutId', rolloutRoute);
  app.get('/runs/:runId/iterations/:iteration/eval/:set/rollouts/:rolloutId', rolloutRoute);
  app.get<{ Params: { name: string } }>('/assets/:name', async (req, reply) => {
    const asset = Object.hasOwn(ASSETS, req.params.name) ? ASSETS[req.params.name] : undefined;
    if (!asset) throw new NotFoundError(`no asset ${req.params.name}`);
    return reply
      .type(asset.type)
      .header('cache-control', 'public, max-age=3600')
      .send(await readFile(asset.file));
  });
  return app;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** Temporal Web as pages link to it: VOLT_TEMPORAL_WEB_URL, else the dev server's UI next to VOLT_TEMPORAL_ADDRESS. */
export function temporalWebUrl(env: Readonly<VoltEnv>): string {
  if (env.VOLT_TEMPORAL_WEB_URL) return env.VOLT_TEMPORAL_WEB_URL.replace(/\/+$/, '');
  const host = env.VOLT_TEMPORAL_ADDRESS.split(':')[0] ?? '127.0.0.1';
  return `http://${host}:${env.VOLT_TEMPORAL_UI_PORT}`;
}

/** `volt dashboard`: listen on VOLT_DASHBOARD_LISTEN_HOST at VOLT_DASHBOARD_URL's port until closed. */
export async function runDashboard(env: Readonly<VoltEnv>): Promise<FastifyInstance> {
  const host = env.VOLT_DASHBOARD_LISTEN_HOST;
  if (!LOOPBACK.has(host) && !env.VOLT_DASHBOARD_TOKEN)
    throw new Error(
      `VOLT_DASHBOARD_LISTEN_HOST=${host} is beyond loopback: set VOLT_DASHBOARD_TOKEN (16+ characters) so only holders of it can read the runs`,
    );
  const port = Number(new URL(env.VOLT_DASHBOARD_URL).port || 80);
  const { client, close } = await connectClient(env);
  const app = await buildDashboard({
    client,
    store: createObjectStore(env),
    pages: { temporalWebUrl: temporalWebUrl(env), namespace: env.VOLT_TEMPORAL_NAMESPACE },
    ...(env.VOLT_DASHBOARD_TOKEN ? { token: env.VOLT_DASHBOARD_TOKEN } : {}),
  });
  app.addHook('onClose', async () => close());
  await app.listen({ host, port });
  const stop = () => void app.close();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return app;
}
