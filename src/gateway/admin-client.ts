import { request } from 'undici';
import type { RegisterRollout, RolloutRecord } from './registry/rollout-registry.js';

export interface RolloutInfo extends Omit<RolloutRecord, 'token'> {
  inFlight: number;
  nextSeq: number;
  upstreamFailures: number;
}

export class GatewayAdminError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'GatewayAdminError';
  }
}

/** Typed client for the gateway's admin API, used by the pipeline to open and close rollouts. */
export class GatewayAdminClient {
  private readonly base: string;

  constructor(
    baseUrl: string,
    private readonly adminKey: string,
  ) {
    this.base = baseUrl.replace(/\/+$/, '');
  }

  register(input: RegisterRollout): Promise<{ token: string; baseUrl: string; created: boolean }> {
    return this.call('POST', '/admin/rollouts', input);
  }

  get(token: string): Promise<RolloutInfo> {
    return this.call('GET', `/admin/rollouts/${encodeURIComponent(token)}`);
  }

  /**
   * Waits for the rollout's in-flight calls and for all its spans to be in the object store. `upstreamFailures`
   * counts the attempt's calls that failed on the model side; it is kept in the registry file, so restarts keep it.
   * With replicas, `missingSpans` lists seqs another replica numbered whose spans did not arrive in time (each counted
   * in upstreamFailures, so the attempt is never trained on). `abandonedCallMs`: the longest call whose client left
   * before its answer (the agent was killed while the model held it).
   */
  close(token: string): Promise<{
    spans: number;
    upstreamFailures: number;
    budgetExceeded?: string | null;
    abandonedCallMs?: number;
    missingSpans?: number[];
  }> {
    return this.call('POST', `/admin/rollouts/${encodeURIComponent(token)}/close`);
  }

  pause(): Promise<{ paused: boolean }> {
    return this.call('POST', '/admin/pause');
  }

  resume(): Promise<{ paused: boolean }> {
    return this.call('POST', '/admin/resume');
  }

  drain(): Promise<{ paused: boolean; inFlight: number; pendingUploads: number }> {
    return this.call('POST', '/admin/drain');
  }

  private async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await request(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.adminKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new GatewayAdminError(
        res.statusCode,
        `gateway ${method} ${path}: ${res.statusCode} non-JSON answer: ${text.slice(0, 200)}`,
        null,
      );
    }
    if (res.statusCode >= 400) {
      const err = (json as { error?: { message?: string; code?: string | null } }).error;
      throw new GatewayAdminError(
        res.statusCode,
        `gateway ${method} ${path}: ${res.statusCode} ${err?.message ?? text.slice(0, 200)}`,
        err?.code ?? null,
      );
    }
    return json as T;
  }
}
