import { z } from 'zod';

const sha256 = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 lowercase hex digits');

/** A policy the model server can serve: the base model, or a LoRA adapter stored content-addressed. */
const adapterRefSchema = z.object({
  /** Name the model server serves it under (base model name or adapter name). */
  name: z.string().min(1),
  /** Object-store prefix of the adapter (keys.checkpoint), null for the base model. */
  checkpointKey: z.string().min(1).nullable(),
  sha256: sha256.nullable(),
  /** Iteration whose update produced it, null for the base model. */
  iteration: z.number().int().min(0).nullable(),
});
/**
 * A run's policy. A team with several trained roles trains one adapter per role: `roles` holds each trained role's
 * current adapter (or the base model), and the top-level fields are the first trained role's (src/contracts/policy-set.ts).
 */
export const policyRefSchema = adapterRefSchema.extend({
  roles: z.record(z.string().min(1), adapterRefSchema).optional(),
});
export type PolicyRef = z.output<typeof policyRefSchema>;

/** One promotion of the alias: which policy, the held-out score that earned it, when. */
export const aliasEntrySchema = z.object({
  policy: policyRefSchema,
  score: z.number(),
  /** Iteration that promoted it; null for a rollback to the base model. */
  iteration: z.number().int().min(0).nullable(),
  at: z.string().min(1),
});
export type AliasEntry = z.output<typeof aliasEntrySchema>;

/** keys.modelAlias(run, 'best'): the promoted checkpoint, with every earlier promotion kept for rollback. */
export const modelAliasSchema = z.object({
  alias: z.string().min(1),
  servedAs: z.string().min(1),
  current: aliasEntrySchema,
  history: z.array(aliasEntrySchema),
});
export type ModelAlias = z.output<typeof modelAliasSchema>;

/** Content-addressed directory manifest (keys.checkpointManifest): written last, so its presence means complete. */
export const dirManifestSchema = z.object({
  sha256,
  files: z.array(z.object({ path: z.string().min(1), size: z.number().int().nonnegative(), sha256 })),
});
export type DirManifest = z.output<typeof dirManifestSchema>;
