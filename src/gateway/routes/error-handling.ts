import type { FastifyError, FastifyInstance } from 'fastify';
import { anthropicErrorBody, speaksAnthropic } from '../agent-apis/anthropic-error.js';
import type { GatewayMetrics } from '../metrics.js';
import { GatewayError, errorBody, typeForStatus } from './openai-error.js';

/** Every error leaves in the OpenAI shape; client faults keep their 4xx, and only real gateway faults are 5xx. */
export function registerErrorHandling(app: FastifyInstance, metrics: GatewayMetrics): void {
  app.setErrorHandler((err: FastifyError | GatewayError, request, reply) => {
    const anthropic = speaksAnthropic(request.url);
    if (err instanceof GatewayError) {
      return reply
        .code(err.statusCode)
        .headers(err.headers)
        .send(anthropic ? anthropicErrorBody(err.statusCode, err.message) : err.toBody());
    }
    const status =
      typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500
        ? err.statusCode
        : err.validation
          ? 400
          : 500;
    if (status >= 500) {
      request.log.error({ err }, 'gateway fault');
      return reply
        .code(500)
        .send(
          anthropic
            ? anthropicErrorBody(500, 'internal gateway error')
            : errorBody('internal gateway error', 'api_error', 'internal_error'),
        );
    }
    return reply
      .code(status)
      .send(
        anthropic
          ? anthropicErrorBody(status, err.message)
          : errorBody(err.message, typeForStatus(status), err.code ?? null),
      );
  });

  app.setNotFoundHandler((request, reply) => {
    const message = `no route for ${request.method} ${request.url.split('?')[0]}`;
    return reply
      .code(404)
      .send(
        speaksAnthropic(request.url)
          ? anthropicErrorBody(404, message)
          : errorBody(message, 'not_found_error', 'route_not_found'),
      );
  });

  // A callback hook, not an async one: it runs for every request and has nothing to await.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.requests.inc({ route, status: String(reply.statusCode) });
    metrics.latency.observe({ route }, reply.elapsedTime / 1000);
    done();
  });
}
