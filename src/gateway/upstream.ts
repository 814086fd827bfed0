import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, type Dispatcher } from 'undici';

export interface UpstreamOptions {
  /** Total tries for 429/5xx/connect errors before the first byte reaches the agent. */
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  connections?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  onRetry?: (reason: string) => void;
}

export interface UpstreamResponse {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Dispatcher.ResponseData['body'];
  attempts: number;
}

/** The model server behind a keep-alive undici pool, with bounded, jittered retries that honour Retry-After. */
export class Upstream {
  private readonly pool: Pool;
  private readonly basePath: string;

  constructor(baseUrl: string, private readonly opts: UpstreamOptions = {}) {
    const url = new URL(baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: opts.connections ?? 128,
      keepAliveTimeout: 30_000,
      headersTimeout: opts.headersTimeoutMs ?? 300_000,
      bodyTimeout: opts.bodyTimeoutMs ?? 300_000,
    });
  }

  /** POST JSON; returns the first response that is not retryable (or the last one) with its body unread. */
  async post(path: string, body: string, signal: AbortSignal): Promise<UpstreamResponse> {
    const maxAttempts = this.opts.maxAttempts ?? 4;
    for (let attempt = 1; ; attempt++) {
      let res: Dispatcher.ResponseData;
      try {
        res = await this.pool.request({
          method: 'POST',
          path: `${this.basePath}${path}`,
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body,
          signal,
        });
      } catch (err) {
        if (signal.aborted || attempt >= maxAttempts || !isConnectError(err)) throw err;
        this.opts.onRetry?.('connect');
        await sleep(this.backoff(attempt, null), undefined, { signal });
        continue;
      }
      const retryable = res.statusCode === 429 || res.statusCode >= 500;
      if (!retryable || attempt >= maxAttempts) return { ...res, attempts: attempt };
      await res.body.dump().catch(() => undefined);
      this.opts.onRetry?.(String(res.statusCode));
      await sleep(this.backoff(attempt, header(res.headers, 'retry-after')), undefined, { signal });
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private backoff(attempt: number, retryAfter: string | undefined | null): number {
    const max = this.opts.retryMaxMs ?? 5_000;
    const seconds = retryAfter ? Number(retryAfter) : NaN;
    if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, max);
    const base = (this.opts.retryBaseMs ?? 100) * 2 ** (attempt - 1);
    return Math.min(base * (0.5 + Math.random()), max);
  }
}

export function header(headers: UpstreamResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

const CONNECT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED']);

function isConnectError(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } };
  return CONNECT_CODES.has(e.code ?? '') || CONNECT_CODES.has(e.cause?.code ?? '');
}
