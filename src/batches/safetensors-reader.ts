import { open } from 'node:fs/promises';
import { z } from 'zod';
import type { Dtype } from './safetensors-writer.js';

/** Reads the safetensors files SafetensorsWriter writes (1-D tensors of the dtypes it knows), with header checks. */
const ARRAYS = { F64: Float64Array, F32: Float32Array, I32: Int32Array, U8: Uint8Array, BOOL: Uint8Array } as const;
export type TypedArray = Float64Array | Float32Array | Int32Array | Uint8Array;

/** The spec caps headers at 100 MB; the Rust reader refuses bigger ones, so this one does too. */
const MAX_HEADER = 100_000_000;

const tensorInfo = z
  .object({
    dtype: z.enum(['F64', 'F32', 'I32', 'U8', 'BOOL']),
    shape: z.array(z.number().int().nonnegative()),
    data_offsets: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]),
  })
  .strict();
const headerSchema = z.record(z.string(), z.unknown());

export interface SafetensorsHeader {
  metadata: Record<string, string>;
  tensors: Map<string, z.output<typeof tensorInfo>>;
  /** Where the data section starts in the file. */
  dataStart: number;
}

export class SafetensorsFormatError extends Error {
  override name = 'SafetensorsFormatError';
}

function parseHeader(json: string, headerLength: number): SafetensorsHeader {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new SafetensorsFormatError(`header is not JSON (${(err as Error).message})`);
  }
  const parsed = headerSchema.safeParse(raw);
  if (!parsed.success) throw new SafetensorsFormatError('header is not a JSON object');
  const tensors = new Map<string, z.output<typeof tensorInfo>>();
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed.data)) {
    if (name === '__metadata__') {
      const m = z.record(z.string(), z.string()).safeParse(value);
      if (!m.success) throw new SafetensorsFormatError('__metadata__: must map strings to strings');
      metadata = m.data;
      continue;
    }
    const t = tensorInfo.safeParse(value);
    if (!t.success)
      throw new SafetensorsFormatError(
        `tensor ${name}: ${t.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    tensors.set(name, t.data);
  }
  return { metadata, tensors, dataStart: 8 + headerLength };
}

function headerLength(prefix: Buffer, fileSize: number): number {
  if (prefix.length < 8)
    throw new SafetensorsFormatError(`file of ${fileSize} bytes is too short for a safetensors header`);
  const n = prefix.readBigUInt64LE(0);
  if (n > BigInt(Math.min(MAX_HEADER, fileSize - 8)))
    throw new SafetensorsFormatError(`header length ${n} exceeds the file or the 100 MB limit`);
  return Number(n);
}

/** Only the header of a file on disk (e.g. a sample count), without reading the data. */
export async function readSafetensorsHeaderFile(file: string): Promise<SafetensorsHeader> {
  const fh = await open(file, 'r');
  try {
    const size = (await fh.stat()).size;
    const prefix = Buffer.alloc(Math.min(8, size));
    await fh.read(prefix, 0, prefix.length, 0);
    const n = headerLength(prefix, size);
    const json = Buffer.alloc(n);
    await fh.read(json, 0, n, 8);
    return parseHeader(json.toString('utf8'), n);
  } finally {
    await fh.close();
  }
}

/** Every tensor of an in-memory file as a typed array of its dtype (copied only when misaligned). */
export function readSafetensors(bytes: Buffer): {
  metadata: Record<string, string>;
  tensors: Map<string, { dtype: Dtype; data: TypedArray }>;
} {
  const n = headerLength(bytes, bytes.length);
  const header = parseHeader(bytes.toString('utf8', 8, 8 + n), n);
  const dataLength = bytes.length - header.dataStart;
  const tensors = new Map<string, { dtype: Dtype; data: TypedArray }>();
  for (const [name, t] of header.tensors) {
    const Ctor = ARRAYS[t.dtype];
    const [begin, end] = t.data_offsets;
    const count = t.shape.reduce((a, b) => a * b, 1);
    if (end > dataLength || begin > end || end - begin !== count * Ctor.BYTES_PER_ELEMENT) {
      throw new SafetensorsFormatError(
        `tensor ${name}: data_offsets [${begin}, ${end}] do not match shape [${t.shape}] of ${t.dtype} in ${dataLength} data bytes`,
      );
    }
    const at = bytes.byteOffset + header.dataStart + begin;
    const data =
      at % Ctor.BYTES_PER_ELEMENT === 0
        ? new Ctor(bytes.buffer as ArrayBuffer, at, count)
        : new Ctor(new Uint8Array(bytes.subarray(header.dataStart + begin, header.dataStart + end)).buffer);
    tensors.set(name, { dtype: t.dtype, data });
  }
  return { metadata: header.metadata, tensors };
}
