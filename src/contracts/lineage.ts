import { z } from 'zod';
import { policyRefSchema } from './policy.js';

/** What one run of a lineage took and left: where it started, what it compared against, what it promoted. */
export const lineageRunSchema = z.object({
  runId: z.string().min(1),
  startedFrom: policyRefSchema,
  /** The lineage's policy when the run started, evaluated in the run on the same held-out set as its candidates. */
  incumbent: policyRefSchema,
  incumbentScore: z.number().nullable(),
  /** The policy the run promoted (the lineage's new current policy), null when no candidate beat the incumbent. */
  promoted: policyRefSchema.nullable(),
  outcome: z.enum(['promoted', 'kept', 'no-new-tasks']),
  /** The pinned train set (keys.taskSet) and how many of its tasks were new or replayed; null with no new tasks. */
  trainSet: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  newTasks: z.number().int().min(0),
  replayTasks: z.number().int().min(0),
  /** Task files (object keys under tasks.trainPrefix) this run consumed: later runs treat them as old. */
  taskFiles: z.array(z.string().min(1)),
  at: z.string().min(1),
});
export type LineageRun = z.output<typeof lineageRunSchema>;

/** keys.lineage(name): the lineage's current policy and every run it has had, oldest first. */
export const lineageSchema = z.object({
  name: z.string().min(1),
  /** The promoted policy production serves (under the deploy alias); null until the first promotion (the base model). */
  current: z
    .object({ policy: policyRefSchema, score: z.number(), runId: z.string().min(1), at: z.string().min(1) })
    .nullable(),
  runs: z.array(lineageRunSchema),
});
export type Lineage = z.output<typeof lineageSchema>;

/**
 * keys.deployAlias(alias): which policy the model server serves under a stable name, with the entries it replaced. The
 * lineage owns the alias from its first run on (current null: claimed, nothing promoted yet, nothing served).
 */
export const deployAliasSchema = z.object({
  alias: z.string().min(1),
  lineage: z.string().min(1),
  current: z.object({ policy: policyRefSchema, runId: z.string().min(1), at: z.string().min(1) }).nullable(),
  history: z.array(z.object({ policy: policyRefSchema, runId: z.string().min(1), at: z.string().min(1) })),
});
export type DeployAlias = z.output<typeof deployAliasSchema>;
