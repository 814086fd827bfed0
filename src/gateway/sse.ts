/**
 * Splits an SSE byte stream into the `data` payloads of its events, as they arrive. Comments and other fields
 * are dropped; multi-line data is joined with '\n' as the SSE spec says.
 */
export async function* sseData(body: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const part of body) {
    buffer += typeof part === 'string' ? part : decoder.decode(part, { stream: true });
    let end: number;
    while ((end = eventEnd(buffer)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^(\r\n\r\n|\n\n|\r\r)/, '');
      const data = dataOf(block);
      if (data !== null) yield data;
    }
  }
  const tail = dataOf(buffer + decoder.decode());
  if (tail !== null) yield tail;
}

function eventEnd(buffer: string): number {
  const m = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
  return m ? m.index : -1;
}

function dataOf(block: string): string | null {
  const lines: string[] = [];
  for (const line of block.split(/\r\n|\n|\r/)) {
    if (line.startsWith('data:')) lines.push(line.slice(line.startsWith('data: ') ? 6 : 5));
  }
  return lines.length ? lines.join('\n') : null;
}
