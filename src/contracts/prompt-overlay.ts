import { z } from 'zod';

/**
 * A prompt overlay: a versioned system-prompt change the gateway applies to every chat call of the rollouts
 * registered with it, so prompt optimisation needs no change to the agent. Stored per run at
 * keys.promptOverlay(runId, version), written once and never changed; version 0 means "the agent's own prompt".
 */
export interface PromptOverlay {
  runId: string;
  /** 1, 2, 3, ... within the run; allocated by the workflow, so a retried activity rewrites the same version. */
  version: number;
  /**
   * replace: the system message becomes the rendered template; prepend / append: the rendered template goes
   * before / after the agent's own system message (separated by a blank line). With no system message in the
   * request one is inserted at the start, and {{original}} renders as ''.
   */
  mode: 'replace' | 'prepend' | 'append';
  /** Text with an optional {{original}} placeholder: the agent's own system message, as it sent it. */
  template: string;
  /** Where the overlay came from, for the report and the Web UI. */
  origin: {
    strategy: 'seed' | 'manual' | 'textual_gradient' | 'bootstrap';
    /** Versions this one was derived from (0 = the agent's own prompt). */
    parents: number[];
    /** Optimisation round that proposed it; null for seed/manual overlays. */
    round: number | null;
    /** One line for humans: the critique summary, or which rollouts became demonstrations. */
    note: string;
  };
  createdAt: string;
}

/** The placeholder that renders as the agent's own system message. */
export const ORIGINAL_PROMPT_VARIABLE = '{{original}}';

/** Which prompt a run uses now: written by promotion, read by the training/eval rollouts of the run. */
export interface ActivePrompt {
  runId: string;
  /** 0 = the agent's own prompt. */
  version: number;
  /** Validation score that earned the promotion (mean reward), null for version 0 before any scoring. */
  score: number | null;
  promotedAt: string;
  /** Every promotion so far, oldest first (including this one). */
  history: { version: number; score: number | null; promotedAt: string }[];
}

const isoDate = z.string().min(1);

/** The stored shape of a PromptOverlay; version 0 is the agent's own prompt and is never stored. */
export const promptOverlaySchema = z.strictObject({
  runId: z.string().min(1),
  version: z.number().int().min(1),
  mode: z.enum(['replace', 'prepend', 'append']),
  template: z.string().max(100_000),
  origin: z.strictObject({
    strategy: z.enum(['seed', 'manual', 'textual_gradient', 'bootstrap']),
    parents: z.array(z.number().int().min(0)),
    round: z.number().int().min(0).nullable(),
    note: z.string(),
  }),
  createdAt: isoDate,
}) satisfies z.ZodType<PromptOverlay>;

const promotionSchema = z.strictObject({
  version: z.number().int().min(0),
  score: z.number().nullable(),
  promotedAt: isoDate,
});

export const activePromptSchema = z.strictObject({
  runId: z.string().min(1),
  version: z.number().int().min(0),
  score: z.number().nullable(),
  promotedAt: isoDate,
  history: z.array(promotionSchema),
}) satisfies z.ZodType<ActivePrompt>;
