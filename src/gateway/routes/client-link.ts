import type { ServerResponse } from 'node:http';

/** What the upstream side of a call needs to stop when the agent goes away. */
export interface Cancellation {
  readonly gone: boolean;
  /** Runs `cancel` if the agent goes away (at once if it already has) until the returned release is called. */
  onGone(cancel: (reason: Error) => void): () => void;
  /** For APIs that take an AbortSignal (streams, retry waits); made on first use. */
  readonly signal: AbortSignal;
}

const noop = () => undefined;

/**
 * The agent's end of one call: fires once if the agent disconnects before its response finished. An AbortController
 * is made only when something asks for a signal, since most calls finish without one and making one per call (with
 * its listeners) costs more than several proxy steps put together.
 */
export class ClientLink implements Cancellation {
  private reason: Error | null = null;
  private cancel: ((reason: Error) => void) | null = null;
  private controller: AbortController | null = null;

  constructor(raw: ServerResponse) {
    raw.once('close', () => {
      if (!raw.writableFinished) this.disconnect(new Error('client disconnected'));
    });
  }

  get gone(): boolean {
    return this.reason !== null;
  }

  onGone(cancel: (reason: Error) => void): () => void {
    if (this.reason) {
      cancel(this.reason);
      return noop;
    }
    this.cancel = cancel;
    return () => {
      if (this.cancel === cancel) this.cancel = null;
    };
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.reason) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  private disconnect(reason: Error): void {
    this.reason = reason;
    this.cancel?.(reason);
    this.cancel = null;
    this.controller?.abort(reason);
  }
}
