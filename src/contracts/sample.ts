import { z } from 'zod';

/**
 * One training sample, exactly schemas/sample.schema.json (snake_case, shared with the Python trainer);
 * src/batches/batch-file.ts stores samples as safetensors columns.
 */
export const sampleRowSchema = z
  .strictObject({
    sample_id: z.string().min(1),
    run_id: z.string().min(1),
    iteration: z.number().int().min(0),
    rollout_id: z.string().min(1),
    attempt: z.number().int().min(0),
    task_id: z.string().min(1),
    group_id: z.string().min(1),
    span_ids: z.array(z.string()).min(1),
    prompt_ids: z.array(z.number().int().min(0)).min(1),
    response_ids: z.array(z.number().int().min(0)).min(1),
    loss_mask: z.array(z.union([z.literal(0), z.literal(1)])).min(1),
    rollout_logprobs: z.array(z.number().max(0)).min(1),
    advantage: z.number(),
    reward: z.number(),
    truncated: z.boolean(),
  })
  .refine((s) => s.response_ids.length === s.loss_mask.length && s.response_ids.length === s.rollout_logprobs.length, {
    message: 'response_ids, loss_mask and rollout_logprobs must have the same length',
    path: ['loss_mask'],
  });
export type SampleRow = z.output<typeof sampleRowSchema>;
