/** Errors the gateway answers with, always in the OpenAI shape `{error: {message, type, param, code}}`. */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export class GatewayError extends Error {
  readonly statusCode: number;
  readonly type: string;
  readonly code: string | null;
  readonly param: string | null;
  readonly headers: Record<string, string>;

  constructor(
    statusCode: number,
    message: string,
    opts: { type?: string; code?: string | null; param?: string | null; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'GatewayError';
    this.statusCode = statusCode;
    this.type = opts.type ?? typeForStatus(statusCode);
    this.code = opts.code ?? null;
    this.param = opts.param ?? null;
    this.headers = opts.headers ?? {};
  }

  toBody(): OpenAIErrorBody {
    return errorBody(this.message, this.type, this.code, this.param);
  }
}

export function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): OpenAIErrorBody {
  return { error: { message, type, param, code } };
}

export function typeForStatus(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}

export const gatewayErrors = {
  unknownToken: () => new GatewayError(401, 'unknown or closed rollout token', { code: 'invalid_rollout_token' }),
  badAdminKey: () => new GatewayError(401, 'missing or wrong admin bearer key', { code: 'invalid_admin_key' }),
  badMetricsKey: () =>
    new GatewayError(401, 'missing or wrong metrics bearer key (VOLT_GATEWAY_METRICS_KEY, or the admin key)', {
      code: 'invalid_metrics_key',
    }),
  paused: (retryAfterS: number) =>
    new GatewayError(429, 'gateway is paused; retry later', {
      code: 'gateway_paused',
      headers: { 'retry-after': String(retryAfterS) },
    }),
  closing: () => new GatewayError(503, 'gateway is shutting down', { code: 'gateway_closing' }),
} as const;
