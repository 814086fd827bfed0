import { Context } from '@temporalio/activity';

/** Heartbeat every `everyMs` while `fn` runs, so a worker killed mid-call is noticed within the heartbeat timeout. */
export async function heartbeating<T>(fn: () => Promise<T>, everyMs = 2_000, details?: () => unknown): Promise<T> {
  const ctx = Context.current();
  const ticker = setInterval(() => ctx.heartbeat(details?.()), everyMs);
  try {
    return await fn();
  } finally {
    clearInterval(ticker);
  }
}
