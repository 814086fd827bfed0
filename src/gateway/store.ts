/**
 * The slice of the object store the gateway needs; `createObjectStore(cfg)` from src/storage satisfies it
 * structurally. Tests and the bench pass the real one, never an in-memory map.
 */
export interface GatewayStore {
  putJson(key: string, value: unknown): Promise<unknown>;
  /** Span objects, as the uploader built them from the WAL's call records (segments compressed). */
  putBytes(key: string, body: Buffer, size?: number, contentType?: string): Promise<unknown>;
  /** Reads span objects back (src/storage/spans.ts). */
  getBytes(key: string): Promise<Buffer>;
  /** null when the key does not exist; other failures throw. */
  getJsonOrNull(key: string): Promise<unknown>;
  /** Objects under a prefix, in key order. */
  list(prefix: string, startAfter?: string): AsyncIterable<{ key: string }>;
  /** Withdraws a lost seq claim (registry/seq-claims.ts); removing a missing key is not an error. */
  remove(key: string): Promise<void>;
}

export async function listKeys(store: GatewayStore, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.list(prefix)) out.push(o.key);
  return out;
}
