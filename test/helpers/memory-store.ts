import type { z } from 'zod';
import { ObjectNotFoundError } from '../../src/storage/errors.js';
import { sha256Bytes } from '../../src/storage/hash.js';
import { assertKey } from '../../src/storage/keys.js';
import type { ObjectInfo, ObjectStore, PutResult } from '../../src/storage/object-store.js';
import { checkRecord, parseJsonRecord, parseRecord } from '../../src/storage/records.js';

type FakeSlice = Pick<ObjectStore, 'putBytes' | 'getBytes' | 'stat' | 'putJson' | 'getJson' | 'getJsonOrNull' | 'list'>;

/**
 * FAKE object store for unit tests, which start no S3 server: objects live in a Map. It validates what it receives
 * the way ObjectStore does (keys checked, records checked against their contract on write and on read), so a domain
 * module that writes a bad key or record fails here as it would against S3. Buffers only: no streams.
 */
export class FakeObjectStore implements FakeSlice {
  readonly objects = new Map<string, Buffer>();

  async putBytes(key: string, body: Parameters<ObjectStore['putBytes']>[1]): Promise<PutResult> {
    assertKey(key);
    if (!(body instanceof Uint8Array)) throw new TypeError(`FakeObjectStore.putBytes ${key}: only bytes, no streams`);
    const bytes = Buffer.from(body);
    this.objects.set(key, bytes);
    return { key, sha256: sha256Bytes(bytes), size: bytes.length };
  }

  async getBytes(key: string): Promise<Buffer> {
    assertKey(key);
    const bytes = this.objects.get(key);
    if (!bytes) throw new ObjectNotFoundError('fake', key);
    return bytes;
  }

  async stat(key: string): Promise<ObjectInfo | null> {
    const bytes = this.objects.get(key);
    return bytes
      ? { key, size: bytes.length, etag: sha256Bytes(bytes), lastModified: new Date(0), sha256: sha256Bytes(bytes) }
      : null;
  }

  async putJson(key: string, value: unknown): Promise<PutResult>;
  async putJson<S extends z.ZodType>(key: string, value: z.input<S>, schema: S): Promise<PutResult>;
  async putJson(key: string, value: unknown, schema?: z.ZodType): Promise<PutResult> {
    return this.putBytes(key, Buffer.from(JSON.stringify(schema ? checkRecord(key, schema, value) : value)));
  }

  async getJson(key: string): Promise<unknown>;
  async getJson<S extends z.ZodType>(key: string, schema: S): Promise<z.output<S>>;
  async getJson(key: string, schema?: z.ZodType): Promise<unknown> {
    const value = parseJsonRecord(key, (await this.getBytes(key)).toString('utf8'));
    return schema ? parseRecord(key, schema, value) : value;
  }

  async getJsonOrNull(key: string): Promise<unknown>;
  async getJsonOrNull<S extends z.ZodType>(key: string, schema: S): Promise<z.output<S> | null>;
  async getJsonOrNull(key: string, schema?: z.ZodType): Promise<unknown> {
    if (!this.objects.has(key)) return null;
    return schema ? this.getJson(key, schema) : this.getJson(key);
  }

  async *list(prefix: string): AsyncGenerator<{ key: string; size: number }> {
    assertKey(prefix, { prefix: true });
    for (const key of [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort())
      yield { key, size: this.objects.get(key)!.length };
  }

  /** The stored JSON at `key`, parsed (for assertions). */
  json(key: string): unknown {
    const bytes = this.objects.get(key);
    return bytes === undefined ? undefined : JSON.parse(bytes.toString('utf8'));
  }
}
