import type { VoltEnv } from '../config/env.js';
import { loopbackHost, splitHostPort } from './ports.js';

/** An http://127.0.0.1:<port> URL from the environment; the local stack needs an explicit loopback port. */
function loopbackUrl(value: string, envVar: string) {
  const url = new URL(value);
  if (url.protocol !== 'http:' || !url.port)
    throw new Error(`${envVar}: the local stack needs http://127.0.0.1:<port>, got ${value}`);
  const host = loopbackHost(url.hostname, envVar);
  return { host, port: Number(url.port), url: `http://${host}:${url.port}` };
}

/** The addresses the stack serves, derived from the environment (loopback only). */
export function stackAddresses(env: VoltEnv) {
  const temporal = splitHostPort(env.VOLT_TEMPORAL_ADDRESS);
  const temporalHost = loopbackHost(temporal.host, 'VOLT_TEMPORAL_ADDRESS');
  const s3 = loopbackUrl(env.VOLT_S3_ENDPOINT, 'VOLT_S3_ENDPOINT');
  return {
    temporal: { host: temporalHost, port: temporal.port, address: `${temporalHost}:${temporal.port}` },
    ui: { port: env.VOLT_TEMPORAL_UI_PORT, url: `http://${temporalHost}:${env.VOLT_TEMPORAL_UI_PORT}` },
    s3: { host: s3.host, port: s3.port, endpoint: s3.url },
    modelServer: loopbackUrl(env.VOLT_MODEL_SERVER_URL, 'VOLT_MODEL_SERVER_URL'),
    gateway: loopbackUrl(env.VOLT_GATEWAY_URL, 'VOLT_GATEWAY_URL'),
    dashboard: loopbackUrl(env.VOLT_DASHBOARD_URL, 'VOLT_DASHBOARD_URL'),
  };
}

export type StackAddresses = ReturnType<typeof stackAddresses>;
