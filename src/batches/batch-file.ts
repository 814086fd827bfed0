import {
  readSafetensors,
  readSafetensorsHeaderFile,
  SafetensorsFormatError,
  type TypedArray,
} from './safetensors-reader.js';
import { SafetensorsWriter, type Dtype } from './safetensors-writer.js';
import type { SampleRow } from '../contracts/sample.js';

/**
 * The batch file: the samples of schemas/sample.schema.json as columns of one safetensors file, so the trainer
 * loads token ids and logprobs as arrays instead of parsing numbers out of text. S samples, P prompt and R
 * response tokens in all; sample i's tokens are the i-th run of prompt_len / response_len in the flat columns.
 */
export const BATCH_TENSORS = [
  ['advantage', 'F64'],
  ['reward', 'F64'], // [S]
  ['iteration', 'I32'],
  ['attempt', 'I32'],
  ['prompt_len', 'I32'],
  ['response_len', 'I32'], // [S]
  ['prompt_ids', 'I32'], // [P]
  ['response_ids', 'I32'], // [R]
  ['rollout_logprobs', 'F32'], // [R]; the trainer computes in fp32, so float32 loses nothing it uses
  ['loss_mask', 'U8'], // [R], 0 or 1
  ['truncated', 'BOOL'], // [S]
  ['ids_jsonl', 'U8'], // UTF-8 JSON Lines, line i: the string fields of sample i (IdFields)
] as const satisfies readonly (readonly [string, Dtype])[];

export const BATCH_FORMAT = { format: 'volt-batch', version: '1' } as const;

/** One line of ids_jsonl: the sample's string fields. */
type IdFields = Pick<SampleRow, 'sample_id' | 'run_id' | 'rollout_id' | 'task_id' | 'group_id' | 'span_ids'>;

export class BatchFileError extends Error {
  override name = 'BatchFileError';
}

function assertTokenIds(row: SampleRow, field: 'prompt_ids' | 'response_ids'): void {
  const ids = row[field];
  for (let i = 0; i < ids.length; i++) {
    const v = ids[i]!;
    // (v | 0) === v: an integer that fits int32; engine token ids do, anything else is corrupt data.
    if ((v | 0) !== v || v < 0)
      throw new BatchFileError(`sample ${row.sample_id}: ${field}[${i}] = ${v} is not a token id (int32 >= 0)`);
  }
}

/** Appends samples as they stream out of the builder; columns spill to temp files, so memory stays bounded. */
export class BatchFileWriter {
  private samples = 0;

  private constructor(private readonly out: SafetensorsWriter) {}

  static async create(opts: { tmpDir?: string; chunk?: number } = {}): Promise<BatchFileWriter> {
    return new BatchFileWriter(await SafetensorsWriter.create(BATCH_TENSORS, opts));
  }

  async add(row: SampleRow): Promise<void> {
    const n = row.response_ids.length;
    if (row.prompt_ids.length === 0 || n === 0)
      throw new BatchFileError(`sample ${row.sample_id}: prompt_ids and response_ids must not be empty`);
    if (row.loss_mask.length !== n || row.rollout_logprobs.length !== n) {
      throw new BatchFileError(
        `sample ${row.sample_id}: loss_mask (${row.loss_mask.length}) and rollout_logprobs (${row.rollout_logprobs.length}) must match response_ids (${n})`,
      );
    }
    assertTokenIds(row, 'prompt_ids');
    assertTokenIds(row, 'response_ids');
    const w = this.out;
    await w.push('advantage', row.advantage);
    await w.push('reward', row.reward);
    await w.push('iteration', row.iteration);
    await w.push('attempt', row.attempt);
    await w.push('prompt_len', row.prompt_ids.length);
    await w.push('response_len', n);
    await w.append('prompt_ids', row.prompt_ids);
    await w.append('response_ids', row.response_ids);
    await w.append('rollout_logprobs', row.rollout_logprobs);
    await w.append('loss_mask', row.loss_mask);
    await w.push('truncated', row.truncated ? 1 : 0);
    const ids: IdFields = {
      sample_id: row.sample_id,
      run_id: row.run_id,
      rollout_id: row.rollout_id,
      task_id: row.task_id,
      group_id: row.group_id,
      span_ids: row.span_ids,
    };
    await w.append('ids_jsonl', Buffer.from(`${JSON.stringify(ids)}\n`));
    this.samples += 1;
  }

  /**
   * `lossScale` (0, 1] multiplies the trainer's loss for this batch (`loss_scale` in the header; see
   * batch.lossNormalizer); `objective` `sft` (rejection sampling) makes the trainer fit the samples by plain NLL (the
   * header says so only then: a policy-gradient batch is what a header without it means).
   */
  async finish(
    file: string,
    lossScale = 1,
    objective: 'policy_gradient' | 'sft' = 'policy_gradient',
  ): Promise<{ samples: number; bytes: number }> {
    if (!(lossScale > 0 && lossScale <= 1)) throw new BatchFileError(`loss_scale ${lossScale} is not in (0, 1]`);
    const metadata = {
      ...BATCH_FORMAT,
      samples: String(this.samples),
      loss_scale: String(lossScale),
      ...(objective === 'sft' && { objective }),
    };
    const { bytes } = await this.out.finish(file, metadata);
    return { samples: this.samples, bytes };
  }

  discard(): Promise<void> {
    return this.out.discard();
  }
}

function checkFormat(metadata: Record<string, string>): number {
  if (metadata.format !== BATCH_FORMAT.format || metadata.version !== BATCH_FORMAT.version) {
    throw new BatchFileError(
      `__metadata__: format ${metadata.format}/${metadata.version}, expected ${BATCH_FORMAT.format}/${BATCH_FORMAT.version}`,
    );
  }
  const samples = Number(metadata.samples);
  if (!Number.isSafeInteger(samples) || samples < 0)
    throw new BatchFileError(`__metadata__.samples: ${metadata.samples} is not a count`);
  return samples;
}

/** The sample count from the header alone (the trainer's minibatch count needs it before training). */
export async function batchFileSamples(file: string): Promise<number> {
  try {
    return checkFormat((await readSafetensorsHeaderFile(file)).metadata);
  } catch (err) {
    if (err instanceof SafetensorsFormatError) throw new BatchFileError(`${file}: ${err.message}`, { cause: err });
    throw err;
  }
}

/** Every sample of an in-memory batch file as a row (logprobs come back as float32 values). */
export function readBatchFile(bytes: Buffer): SampleRow[] {
  let parsed: ReturnType<typeof readSafetensors>;
  try {
    parsed = readSafetensors(bytes);
  } catch (err) {
    if (err instanceof SafetensorsFormatError) throw new BatchFileError(err.message, { cause: err });
    throw err;
  }
  const s = checkFormat(parsed.metadata);
  const col = (name: (typeof BATCH_TENSORS)[number][0], length?: number): TypedArray => {
    const spec = BATCH_TENSORS.find(([n]) => n === name)!;
    const t = parsed.tensors.get(name);
    if (!t) throw new BatchFileError(`tensor ${name} is missing`);
    if (t.dtype !== spec[1]) throw new BatchFileError(`tensor ${name}: dtype ${t.dtype}, expected ${spec[1]}`);
    if (length !== undefined && t.data.length !== length)
      throw new BatchFileError(`tensor ${name}: ${t.data.length} values, expected ${length}`);
    return t.data;
  };
  const promptLen = col('prompt_len', s);
  const responseLen = col('response_len', s);
  const sum = (xs: TypedArray) => {
    let total = 0;
    for (let i = 0; i < xs.length; i++) total += xs[i]!;
    return total;
  };
  const [promptIds, responseIds] = [col('prompt_ids', sum(promptLen)), col('response_ids', sum(responseLen))];
  const [logprobs, mask] = [col('rollout_logprobs', responseIds.length), col('loss_mask', responseIds.length)];
  const [advantage, reward, iteration, attempt, truncated] = [
    col('advantage', s),
    col('reward', s),
    col('iteration', s),
    col('attempt', s),
    col('truncated', s),
  ];
  const lines = Buffer.from(col('ids_jsonl').buffer, col('ids_jsonl').byteOffset, col('ids_jsonl').byteLength)
    .toString('utf8')
    .split('\n');
  if (lines.length !== s + 1 || lines[s] !== '')
    throw new BatchFileError(`tensor ids_jsonl: ${lines.length - 1} lines, expected ${s}`);
  const rows: SampleRow[] = [];
  let p = 0;
  let r = 0;
  for (let i = 0; i < s; i++) {
    let ids: IdFields;
    try {
      ids = JSON.parse(lines[i]!) as IdFields;
    } catch (err) {
      throw new BatchFileError(`tensor ids_jsonl: line ${i + 1} is not JSON (${(err as Error).message})`);
    }
    const [pn, rn] = [promptLen[i]!, responseLen[i]!];
    rows.push({
      ...ids,
      iteration: iteration[i]!,
      attempt: attempt[i]!,
      prompt_ids: Array.from(promptIds.subarray(p, p + pn)),
      response_ids: Array.from(responseIds.subarray(r, r + rn)),
      loss_mask: Array.from(mask.subarray(r, r + rn)) as (0 | 1)[],
      rollout_logprobs: Array.from(logprobs.subarray(r, r + rn)),
      advantage: advantage[i]!,
      reward: reward[i]!,
      truncated: truncated[i] === 1,
    });
    p += pn;
    r += rn;
  }
  return rows;
}
