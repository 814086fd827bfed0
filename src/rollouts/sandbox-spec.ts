import { z } from 'zod';

/** 'bubblewrap': kernel namespaces around each attempt (the default); 'none': a plain process, only when asked for. */
export const sandboxKindSchema = z.enum(['bubblewrap', 'none']);
export type SandboxKind = z.output<typeof sandboxKindSchema>;

/** Resource limits of one attempt, set as rlimits on the agent (and inherited by everything it starts). */
export const rolloutLimitsSchema = z.strictObject({
  /**
   * Heap and private writable memory per process (RLIMIT_DATA) in MiB. Not RLIMIT_AS: Node reserves gigabytes of
   * address space for WebAssembly (fetch's HTTP parser), which an address-space limit turns into failed requests.
   */
  memoryMb: z.number().int().min(64).max(1_048_576).default(2048),
  /** Processes (and threads) of the attempt's user (RLIMIT_NPROC): a fork bomb stops here. */
  processes: z.number().int().min(8).max(1_000_000).default(512),
  /** Open file descriptors per process (RLIMIT_NOFILE). */
  openFiles: z.number().int().min(16).max(1_048_576).default(1024),
  /** CPU seconds per process (RLIMIT_CPU); null: bounded only by the agent's timeout. */
  cpuSec: z
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3600)
    .nullable()
    .default(null),
});
export type RolloutLimits = z.output<typeof rolloutLimitsSchema>;
