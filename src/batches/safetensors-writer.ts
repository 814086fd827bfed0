import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * A streaming writer of the safetensors format (8-byte little-endian header length, JSON header with
 * dtype/shape/data_offsets, then the raw little-endian bytes of every tensor, back to back). No maintained npm
 * package writes it (the `safetensors` name is a 0.0.1 placeholder), and the spec is a page long.
 * Each 1-D tensor grows by appends into a bounded buffer that spills to its own temp file, so memory does not grow
 * with the tensor; `finish` writes the header and concatenates the spilled columns into the output file.
 */
export type Dtype = 'F64' | 'F32' | 'I32' | 'U8' | 'BOOL';

const ARRAYS = { F64: Float64Array, F32: Float32Array, I32: Int32Array, U8: Uint8Array, BOOL: Uint8Array } as const;
type TypedArray = Float64Array | Float32Array | Int32Array | Uint8Array;

/** Elements per column buffer before it spills to disk (1 MiB of int32); memory is about a dozen of these. */
const DEFAULT_CHUNK = 1 << 18;
const COPY_BUFFER = 1 << 20;

class Column {
  readonly buffer: TypedArray;
  fill = 0;
  length = 0;

  constructor(
    readonly name: string,
    readonly dtype: Dtype,
    chunk: number,
    readonly file: FileHandle,
    readonly fileName: string,
  ) {
    this.buffer = new ARRAYS[dtype](chunk);
  }

  async spill(): Promise<void> {
    if (this.fill === 0) return;
    const bytes = new Uint8Array(this.buffer.buffer, 0, this.fill * this.buffer.BYTES_PER_ELEMENT);
    await this.file.write(bytes);
    this.fill = 0;
  }
}

export class SafetensorsWriter {
  private readonly columns = new Map<string, Column>();
  private finished = false;

  private constructor(
    private readonly dir: string,
    private readonly chunk: number,
  ) {}

  /** Tensors are laid out in the order declared; declare wider dtypes first so every tensor stays aligned. */
  static async create(
    tensors: readonly (readonly [string, Dtype])[],
    opts: { tmpDir?: string; chunk?: number } = {},
  ): Promise<SafetensorsWriter> {
    const dir = await mkdtemp(path.join(opts.tmpDir ?? os.tmpdir(), 'volt-safetensors-'));
    const writer = new SafetensorsWriter(dir, opts.chunk ?? DEFAULT_CHUNK);
    try {
      for (const [i, [name, dtype]] of tensors.entries()) {
        if (writer.columns.has(name)) throw new Error(`safetensors writer: tensor ${name} declared twice`);
        const fileName = path.join(dir, `${i}.bin`);
        writer.columns.set(name, new Column(name, dtype, writer.chunk, await open(fileName, 'w'), fileName));
      }
    } catch (err) {
      await writer.discard();
      throw err;
    }
    return writer;
  }

  private column(name: string): Column {
    const c = this.columns.get(name);
    if (!c) throw new Error(`safetensors writer: no tensor named ${name}`);
    if (this.finished) throw new Error('safetensors writer: append after finish');
    return c;
  }

  /** Append values (converted like a typed-array store: I32 truncates, F32 rounds to nearest). */
  async append(name: string, values: ArrayLike<number>): Promise<void> {
    const c = this.column(name);
    if (c.fill + values.length > c.buffer.length) await c.spill();
    if (values.length > c.buffer.length) {
      // Larger than a whole buffer: convert once and write it straight through.
      const big = new ARRAYS[c.dtype](values.length);
      big.set(values);
      await c.file.write(new Uint8Array(big.buffer));
    } else {
      c.buffer.set(values, c.fill);
      c.fill += values.length;
    }
    c.length += values.length;
  }

  /** One value; the common per-sample case, without allocating an array. */
  async push(name: string, value: number): Promise<void> {
    const c = this.column(name);
    if (c.fill === c.buffer.length) await c.spill();
    c.buffer[c.fill++] = value;
    c.length += 1;
  }

  /** Write header + data to `file`; string metadata goes in the header's `__metadata__`. Removes the temp files. */
  async finish(
    file: string,
    metadata: Record<string, string>,
  ): Promise<{ bytes: number; tensors: Record<string, number> }> {
    this.finished = true;
    try {
      const header: Record<string, unknown> = { __metadata__: metadata };
      let offset = 0;
      for (const c of this.columns.values()) {
        await c.spill();
        await c.file.close();
        const size = c.length * ARRAYS[c.dtype].BYTES_PER_ELEMENT;
        header[c.name] = { dtype: c.dtype, shape: [c.length], data_offsets: [offset, offset + size] };
        offset += size;
      }
      // Pad the header with spaces (the spec allows it) so the data starts 8-byte aligned.
      let json = Buffer.from(JSON.stringify(header));
      json = Buffer.concat([json, Buffer.alloc((8 - (json.length % 8)) % 8, 0x20)]);
      const prefix = Buffer.alloc(8);
      prefix.writeBigUInt64LE(BigInt(json.length));
      const out = await open(file, 'w');
      try {
        await out.write(Buffer.concat([prefix, json]));
        // One reused buffer for the copy: a stream would allocate a fresh chunk per read and feed the GC.
        const copy = Buffer.allocUnsafe(COPY_BUFFER);
        for (const c of this.columns.values()) {
          const from = await open(c.fileName, 'r');
          try {
            for (let n; (n = (await from.read(copy, 0, copy.length)).bytesRead) > 0;) await out.write(copy, 0, n);
          } finally {
            await from.close();
          }
        }
      } finally {
        await out.close();
      }
      return {
        bytes: 8 + json.length + offset,
        tensors: Object.fromEntries([...this.columns.values()].map((c) => [c.name, c.length])),
      };
    } finally {
      await this.discard();
    }
  }

  /** Drop the temp files without writing anything (on failure); safe to call more than once. */
  async discard(): Promise<void> {
    this.finished = true;
    for (const c of this.columns.values()) await c.file.close().catch(() => undefined);
    await rm(this.dir, { recursive: true, force: true });
  }
}
