import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';

/** Serialise objects one per line as they arrive; the source is pulled lazily, so nothing accumulates. */
export function jsonlReadable(items: AsyncIterable<unknown> | Iterable<unknown>): Readable {
  async function* lines() {
    let n = 0;
    for await (const item of items) {
      const line = JSON.stringify(item);
      if (line === undefined) throw new TypeError(`JSONL item ${n} is not JSON-serialisable (got ${typeof item})`);
      n += 1;
      yield `${line}\n`;
    }
  }
  return Readable.from(lines(), { objectMode: false });
}

/** Thrown by parseJsonlLines for a line that is not valid JSON; `line` is 1-based. */
export class JsonlLineError extends Error {
  readonly line: number;

  constructor(line: number, cause: unknown) {
    super(`line ${line}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'JsonlLineError';
    this.line = line;
  }
}

/** Parse a byte stream line by line; blank lines (e.g. a trailing newline) are skipped. */
export async function* parseJsonlLines<T>(stream: Readable): AsyncGenerator<T> {
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of rl) {
      n += 1;
      if (line.trim() === '') continue;
      let value: T;
      try {
        value = JSON.parse(line) as T;
      } catch (err) {
        throw new JsonlLineError(n, err);
      }
      yield value;
    }
  } finally {
    rl.close();
    stream.destroy();
  }
}
