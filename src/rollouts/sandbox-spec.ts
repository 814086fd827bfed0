import { z } from 'zod';

/** 'bubblewrap': kernel namespaces around each attempt (the default); 'none': a plain process, only when asked for. */
export const sandboxKindSchema = z.enum(['bubblewrap', 'none']);
export type SandboxKind = z.output<typeof sandboxKindSchema>;

/** Resource limits of one attempt, set as rlimits on the agent (and inherited by everything it starts). */
export const rolloutLimitsSchema = z.strictObject({
  /** Address space per process (RLIMIT_AS) in MiB; Node agents need ~1 GiB of it just to start. */
  memoryMb: z.number().int().min(64).max(1_048_576).default(4096),
  /** Processes (and threads) of the attempt's user (RLIMIT_NPROC): a fork bomb stops here. */
  processes: z.number().int().min(8).max(1_000_000).default(512),
  /** Open file descriptors per process (RLIMIT_NOFILE). */
  openFiles: z.number().int().min(16).max(1_048_576).default(1024),
  /** CPU seconds per process (RLIMIT_CPU); null: bounded only by the agent's timeout. */
  cpuSec: z.number().int().positive().max(7 * 24 * 3600).nullable().default(null),
});
export type RolloutLimits = z.output<typeof rolloutLimitsSchema>;
