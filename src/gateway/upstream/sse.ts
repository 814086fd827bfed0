/**
 * Splits an SSE byte stream into the `data` payloads of its events, as they arrive: one batch per read, holding
 * the events that read completed (so a relay can answer them with one write). Comments and other fields are
 * dropped; multi-line data is joined with '\n' as the SSE spec says.
 */
export async function* sseBatches(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  const eventEnd = /\r\n\r\n|\n\n|\r\r/g;
  let buffer = '';
  for await (const part of body) {
    buffer += typeof part === 'string' ? part : decoder.decode(part, { stream: true });
    const batch: string[] = [];
    let start = 0;
    eventEnd.lastIndex = 0;
    for (let m = eventEnd.exec(buffer); m; m = eventEnd.exec(buffer)) {
      const data = dataOf(buffer.slice(start, m.index));
      if (data !== null) batch.push(data);
      start = m.index + m[0].length;
    }
    buffer = buffer.slice(start);
    if (batch.length) yield batch;
  }
  const tail = dataOf(buffer + decoder.decode());
  if (tail !== null) yield [tail];
}

/** The same payloads one at a time. */
export async function* sseData(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  for await (const batch of sseBatches(body)) yield* batch;
}

function dataOf(block: string): string | null {
  // The usual event, one `data:` line: no split (a regex split per chunk showed in the streamed relay's profile).
  if (block.startsWith('data:') && !block.includes('\n') && !block.includes('\r'))
    return block.slice(block.startsWith('data: ') ? 6 : 5);
  const lines: string[] = [];
  for (const line of block.split(/\r\n|\n|\r/)) {
    if (line.startsWith('data:')) lines.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return lines.length ? lines.join('\n') : null;
}
