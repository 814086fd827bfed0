import { promisify } from 'node:util';
import {
  brotliCompress,
  brotliCompressSync,
  brotliDecompressSync,
  constants,
  gunzipSync,
  gzip,
  gzipSync,
  type BrotliOptions,
} from 'node:zlib';

/**
 * How segment objects are compressed. Brotli quality 1 is the default: on agent-sized segments it took ~1/5 of
 * gzip level 1's CPU and gave ~2/5 of its bytes (docs/gateway-spans.md); gzip'd and plain segments still read.
 */
export type SegmentCompression = 'brotli' | 'gzip' | 'none';

export const SEGMENT_CONTENT_TYPE: Record<SegmentCompression, string> = {
  brotli: 'application/x-brotli',
  gzip: 'application/gzip',
  none: 'application/x-ndjson',
};

// A fixed 22-bit window: every such stream's first byte has low nibble 0xb, and a non-empty one is never '{' (0x7b).
const BROTLI: BrotliOptions = { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_LGWIN]: 22 } };
const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

export function compressSegment(text: Buffer, how: SegmentCompression): Buffer {
  if (how === 'brotli') return brotliCompressSync(text, withSizeHint(text));
  if (how === 'gzip') return gzipSync(text, { level: 1 });
  return text;
}

/** The same on libuv's thread pool, off the event loop. */
export async function compressSegmentAsync(text: Buffer, how: SegmentCompression): Promise<Buffer> {
  if (how === 'brotli') return brotliAsync(text, withSizeHint(text));
  if (how === 'gzip') return gzipAsync(text, { level: 1 });
  return text;
}

function withSizeHint(text: Buffer): BrotliOptions {
  return { params: { ...BROTLI.params, [constants.BROTLI_PARAM_SIZE_HINT]: text.length } };
}

/**
 * A stored span object's text, recognised by its first bytes: gzip's magic (1f 8b), JSON text ('{'), else a brotli
 * stream as compressSegment writes it (first byte's low nibble 0xb). Anything else is returned as it is, for the
 * JSON parse to name.
 */
export function spanObjectText(bytes: Buffer): string {
  if (bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) return gunzipSync(bytes).toString('utf8');
  if (bytes.length > 0 && bytes[0] !== 0x7b && (bytes[0]! & 0x0f) === 0x0b)
    return brotliDecompressSync(bytes).toString('utf8');
  return bytes.toString('utf8');
}
