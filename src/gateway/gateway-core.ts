import type { FastifyBaseLogger } from 'fastify';
import type { InFlight } from './registry/in-flight.js';
import type { GatewayMetrics } from './metrics.js';
import type { PauseGate } from './registry/pause-gate.js';
import type { PromptOverlayCache } from './upstream/overlay-cache.js';
import type { RolloutRegistry } from './registry/rollout-registry.js';
import type { SeqClaims } from './registry/seq-claims.js';
import type { SharedRollouts } from './registry/shared-rollouts.js';
import type { CallRecorder } from './recording/call-recorder.js';
import type { GatewayStore } from './store.js';
import type { SpanUploader } from './recording/uploader.js';
import type { Upstream } from './upstream/model-client.js';
import type { WriteAheadLog } from './recording/wal.js';

/** Everything the route modules share; built once per app by buildApp. */
export interface GatewayCore {
  registry: RolloutRegistry;
  /** Set when gateway replicas share rollouts and seqs through the object store; null for a lone gateway. */
  shared: SharedRollouts | null;
  seqs: SeqClaims | null;
  inFlight: InFlight;
  wal: WriteAheadLog;
  uploader: SpanUploader;
  recorder: CallRecorder;
  upstream: Upstream;
  store: GatewayStore;
  /** Prompt overlays by run and version, read from the store once each. */
  overlays: PromptOverlayCache;
  metrics: GatewayMetrics;
  gate: PauseGate;
  log: FastifyBaseLogger;
  /** Tokens being closed: new calls are refused while close waits for the ones in flight. */
  closing: Set<string>;
  opts: { publicUrl: string; adminKey: string; pauseWaitMs: number; pauseRetryAfterS: number };
}
