import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Gateway metrics on a registry of their own, so several apps in one process never collide. */
export function createGatewayMetrics(sources: {
  pendingUploads: () => number;
  walBytes: () => number;
  inFlight: () => number;
}) {
  const registry = new Registry();
  const requests = new Counter({
    name: 'volt_gateway_requests_total',
    help: 'Requests by route and status',
    labelNames: ['route', 'status'],
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'volt_gateway_request_duration_seconds',
    help: 'Request latency by route',
    labelNames: ['route'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  const upstreamErrors = new Counter({
    name: 'volt_gateway_upstream_errors_total',
    help: 'Upstream failures and retries by kind',
    labelNames: ['kind'],
    registers: [registry],
  });
  const tokensIn = new Counter({
    name: 'volt_gateway_prompt_tokens_total',
    help: 'Prompt tokens seen',
    registers: [registry],
  });
  const tokensOut = new Counter({
    name: 'volt_gateway_completion_tokens_total',
    help: 'Completion tokens seen',
    registers: [registry],
  });
  const spans = new Counter({
    name: 'volt_gateway_spans_total',
    help: 'Spans recorded by status',
    labelNames: ['status'],
    registers: [registry],
  });
  const spanBytes = new Counter({
    name: 'volt_gateway_span_bytes_total',
    help: 'Bytes of the call records put into span objects, before compression',
    registers: [registry],
  });
  const walBytes = new Counter({
    name: 'volt_gateway_wal_written_bytes_total',
    help: 'Bytes of call records appended to the WAL (request, answer as received, meta)',
    registers: [registry],
  });
  const uploadedBytes = new Counter({
    name: 'volt_gateway_span_upload_bytes_total',
    help: 'Bytes of span objects put into the object store (compressed segments)',
    registers: [registry],
  });
  const uploadLag = new Histogram({
    name: 'volt_gateway_span_upload_lag_seconds',
    help: 'From a span entering the upload queue (durable in the WAL) to its object being in the store',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  new Gauge({
    name: 'volt_gateway_spans_pending_upload',
    help: 'Spans durable in the WAL but not yet in the object store',
    registers: [registry],
    collect() {
      this.set(sources.pendingUploads());
    },
  });
  new Gauge({
    name: 'volt_gateway_wal_bytes',
    help: 'Bytes in live WAL segments',
    registers: [registry],
    collect() {
      this.set(sources.walBytes());
    },
  });
  new Gauge({
    name: 'volt_gateway_in_flight',
    help: 'Agent calls in flight',
    registers: [registry],
    collect() {
      this.set(sources.inFlight());
    },
  });
  return {
    registry,
    requests,
    latency,
    upstreamErrors,
    tokensIn,
    tokensOut,
    spans,
    spanBytes,
    walBytes,
    uploadedBytes,
    uploadLag,
  };
}

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;
