/**
 * Bounded capture of a stream: the first `headBytes` and the last `tailBytes`, with a marker saying how
 * much was dropped in between. Memory stays at head + tail however much the agent writes.
 */
export class HeadTailBuffer {
  private readonly head: Buffer;
  private headLength = 0;
  private readonly tail: Buffer;
  // Next write position in the tail ring and how many bytes of it are valid.
  private tailPos = 0;
  private tailLength = 0;
  private total = 0;

  constructor(headBytes = 64 * 1024, tailBytes = 64 * 1024) {
    if (!Number.isInteger(headBytes) || headBytes < 0 || !Number.isInteger(tailBytes) || tailBytes < 0) {
      throw new RangeError(`headBytes and tailBytes must be non-negative integers, got ${headBytes}, ${tailBytes}`);
    }
    this.head = Buffer.alloc(headBytes);
    this.tail = Buffer.alloc(tailBytes);
  }

  /** Bytes written so far, kept or not. */
  get totalBytes(): number {
    return this.total;
  }

  get truncated(): boolean {
    return this.total > this.head.length + this.tail.length;
  }

  write(chunk: Uint8Array): void {
    this.total += chunk.length;
    let data = chunk;
    if (this.headLength < this.head.length) {
      const n = Math.min(this.head.length - this.headLength, data.length);
      this.head.set(data.subarray(0, n), this.headLength);
      this.headLength += n;
      data = data.subarray(n);
    }
    if (data.length === 0 || this.tail.length === 0) return;
    // Only the last tail.length bytes of a big chunk can survive.
    if (data.length > this.tail.length) data = data.subarray(data.length - this.tail.length);
    const first = Math.min(this.tail.length - this.tailPos, data.length);
    this.tail.set(data.subarray(0, first), this.tailPos);
    this.tail.set(data.subarray(first), 0);
    this.tailPos = (this.tailPos + data.length) % this.tail.length;
    this.tailLength = Math.min(this.tail.length, this.tailLength + data.length);
  }

  /** Head, then a truncation marker if bytes were dropped, then the tail in order. */
  toBuffer(): Buffer {
    const start = (this.tailPos - this.tailLength + this.tail.length) % Math.max(1, this.tail.length);
    const tail =
      start + this.tailLength <= this.tail.length
        ? this.tail.subarray(start, start + this.tailLength)
        : Buffer.concat([this.tail.subarray(start), this.tail.subarray(0, this.tailPos)]);
    const dropped = this.total - this.headLength - this.tailLength;
    const parts = [this.head.subarray(0, this.headLength)];
    if (dropped > 0) parts.push(Buffer.from(`\n[volt: ${dropped} bytes truncated of ${this.total}]\n`));
    parts.push(tail);
    return Buffer.concat(parts);
  }
}
