import { z } from 'zod';

const counter = z.record(z.string(), z.number().int().min(0));
const stats = z.object({
  count: z.number().int().min(0),
  mean: z.number().nullable(),
  std: z.number().nullable(),
  min: z.number().nullable(),
  max: z.number().nullable(),
});

/** keys.batchManifest: what went into the batch, what was left out and why, and span → sample lineage. */
export const batchManifestSchema = z.object({
  /** The run's batch config (src/batches/config.ts) the batch was built with. */
  config: z.record(z.string(), z.unknown()),
  counts: z.object({
    rollouts: z.number().int().min(0),
    groups: z.number().int().min(0),
    groupsUsed: z.number().int().min(0),
    rolloutsUsed: z.number().int().min(0),
    spans: z.number().int().min(0),
    transitions: z.number().int().min(0),
    merges: z.number().int().min(0),
    samples: z.number().int().min(0),
    truncated: z.number().int().min(0),
    /** Scored rollouts that yielded no sample (no usable spans, or every sample dropped). */
    rolloutsWithoutSamples: z.number().int().min(0),
  }),
  tokens: z.object({
    prompt: z.number().int().min(0),
    response: z.number().int().min(0),
    trainable: z.number().int().min(0),
  }),
  mergeRate: z.number().nullable(),
  /** Factor on the batch's loss (batch.lossNormalizer); the batch file's `loss_scale` metadata carries it to the trainer. */
  lossScale: z.number().gt(0).max(1).default(1),
  reward: stats,
  advantage: stats,
  drops: z.object({ rollouts: counter, groups: counter, spans: counter, samples: counter }),
  breaks: z.array(
    z.object({
      rolloutId: z.string(),
      attempt: z.number().int().min(0),
      spanId: z.string(),
      position: z.number().int().nullable(),
      reason: z.string(),
    }),
  ),
  /** span id → sample id, for every span that went into a sample. */
  lineage: z.record(z.string(), z.string()),
});
export type BatchManifest = z.output<typeof batchManifestSchema>;
