import type { FastifyError, FastifyInstance } from 'fastify';
import type { GatewayMetrics } from './metrics.js';
import { GatewayError, errorBody, typeForStatus } from './openai-error.js';

/** Every error leaves in the OpenAI shape; client faults keep their 4xx, and only real gateway faults are 5xx. */
export function registerErrorHandling(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.setErrorHandler((err: FastifyError | GatewayError, request, reply) => {
    if (err instanceof GatewayError) {
      return reply.code(err.statusCode).headers(err.headers).send(err.toBody());
    }
    const status = typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : err.validation ? 400 : 500;
    if (status >= 500) {
      request.log.error({ err }, 'gateway fault');
      return reply.code(500).send(errorBody('internal gateway error', 'api_error', 'internal_error'));
    }
    return reply.code(status).send(errorBody(err.message, typeForStatus(status), err.code ?? null));
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(`no route for ${request.method} ${request.url.split('?')[0]}`, 'not_found_error', 'route_not_found')),
  );

  // A callback hook, not an async one: it runs for every request and has nothing to await.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ route, status: String(reply.statusCode) });
    metrics.latency.observe({ route }, reply.elapsedTime / 1000);
    done();
  });
}
