import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as Minio from 'minio';
import type { z } from 'zod';
import type { VoltEnv } from '../config/env.js';
import { CorruptObjectError, ObjectNotFoundError, ObjectStoreError, toStoreError } from './errors.js';
import { checkRecord, parseJsonRecord, parseRecord } from './records.js';
import { sha256Bytes, sha256File } from './hash.js';
import { JsonlLineError, jsonlReadable, parseJsonlLines } from './jsonl.js';
import { assertKey } from './keys.js';
import { spoolToFile } from './spool.js';
import { getCheckpoint, getDir, putDirContentAddressed } from './dirs.js';

export interface ObjectStoreConfig {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /** Where unknown-length uploads are spooled before the PUT; defaults to the OS temp dir. */
  tmpDir?: string;
}
type S3Env = Pick<
  VoltEnv,
  'VOLT_S3_ENDPOINT' | 'VOLT_S3_ACCESS_KEY' | 'VOLT_S3_SECRET_KEY' | 'VOLT_S3_BUCKET' | 'VOLT_S3_REGION'
>;

export interface PutResult {
  key: string;
  sha256: string;
  size: number;
}
export interface ObjectInfo {
  key: string;
  size: number;
  etag: string;
  lastModified: Date;
  sha256: string | null;
}
type Body = Buffer | Readable | AsyncIterable<Buffer | Uint8Array | string>;

const MAX_SINGLE_PUT = 5 * 1024 ** 3;
const JSON_TYPE = 'application/json';

/** Create a store from the parsed environment (VOLT_S3_*) or an explicit config. */
export function createObjectStore(cfg: ObjectStoreConfig | S3Env): ObjectStore {
  const c: ObjectStoreConfig =
    'VOLT_S3_ENDPOINT' in cfg
      ? {
          endpoint: cfg.VOLT_S3_ENDPOINT,
          accessKey: cfg.VOLT_S3_ACCESS_KEY,
          secretKey: cfg.VOLT_S3_SECRET_KEY,
          bucket: cfg.VOLT_S3_BUCKET,
          region: cfg.VOLT_S3_REGION,
        }
      : cfg;
  const url = new URL(c.endpoint);
  if (url.pathname !== '/' || url.search)
    throw new ObjectStoreError(`S3 endpoint ${c.endpoint} must have no path or query`, null);
  const useSSL = url.protocol === 'https:';
  const client = new Minio.Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    pathStyle: true,
    accessKey: c.accessKey,
    secretKey: c.secretKey,
    region: c.region,
    // One HTTP attempt per call: a retried streaming body would be sent empty; activities retry whole steps.
    retryOptions: { disableRetry: true },
  });
  return new ObjectStore(client, {
    bucket: c.bucket,
    region: c.region,
    endpoint: c.endpoint,
    signPayload: !useSSL,
    tmpDir: c.tmpDir ?? os.tmpdir(),
  });
}

/** The object store, over minio-js. Every key passes assertKey; writes overwrite, so re-running a step is safe. */
export class ObjectStore {
  readonly bucket: string;
  readonly endpoint: string;

  constructor(
    private readonly client: Minio.Client,
    private readonly opts: { bucket: string; region: string; endpoint: string; signPayload: boolean; tmpDir: string },
  ) {
    this.bucket = opts.bucket;
    this.endpoint = opts.endpoint;
  }

  async ensureBucket(): Promise<void> {
    await this.call('ensureBucket', null, async () => {
      if (await this.client.bucketExists(this.bucket)) return;
      try {
        await this.client.makeBucket(this.bucket, this.opts.region);
      } catch (err) {
        // Another worker created it between our check and our create: that is success.
        const code = (err as { code?: unknown }).code;
        if (code !== 'BucketAlreadyOwnedByYou' && code !== 'BucketAlreadyExists') throw err;
      }
    });
  }

  /** Store bytes; a stream is spooled to a temp file first (bounded memory). Returns the content's sha256. */
  async putBytes(key: string, body: Body, size?: number, contentType = 'application/octet-stream'): Promise<PutResult> {
    assertKey(key);
    if (Buffer.isBuffer(body)) {
      if (size !== undefined && size !== body.length)
        throw new ObjectStoreError(`putBytes ${key}: size ${size} but buffer has ${body.length} bytes`, key);
      return this.putSigned(key, body, sha256Bytes(body), body.length, contentType);
    }
    const spooled = await spoolToFile(body, this.opts.tmpDir);
    try {
      if (size !== undefined && size !== spooled.size)
        throw new ObjectStoreError(`putBytes ${key}: size ${size} but stream had ${spooled.size} bytes`, key);
      return await this.putSigned(key, { file: spooled.file }, spooled.sha256, spooled.size, contentType);
    } finally {
      await spooled.remove();
    }
  }

  async putFile(key: string, file: string, contentType = 'application/octet-stream'): Promise<PutResult> {
    assertKey(key);
    const { sha256, size } = await sha256File(file);
    return this.putSigned(key, { file }, sha256, size, contentType);
  }

  /** Store a JSON value; with its src/contracts schema the record is checked before it is written. */
  async putJson(key: string, value: unknown): Promise<PutResult>;
  async putJson<S extends z.ZodType>(key: string, value: z.input<S>, schema: S): Promise<PutResult>;
  async putJson(key: string, value: unknown, schema?: z.ZodType): Promise<PutResult> {
    const text = JSON.stringify(schema ? checkRecord(key, schema, value) : value);
    if (text === undefined) throw new TypeError(`putJson ${key}: value is not JSON-serialisable (got ${typeof value})`);
    return this.putBytes(key, Buffer.from(text), undefined, JSON_TYPE);
  }

  /** Stream objects out as JSON lines; only the current line is in memory. */
  async putJsonl(key: string, items: AsyncIterable<unknown> | Iterable<unknown>): Promise<PutResult> {
    return this.putBytes(key, jsonlReadable(items), undefined, 'application/x-ndjson');
  }

  async getStream(key: string): Promise<Readable> {
    assertKey(key);
    return this.call('get', key, () => this.client.getObject(this.bucket, key));
  }

  async getBytes(key: string): Promise<Buffer> {
    const stream = await this.getStream(key);
    const chunks: Buffer[] = [];
    await this.call('get', key, async () => {
      for await (const c of stream) chunks.push(c as Buffer);
    });
    return Buffer.concat(chunks);
  }

  /**
   * Read and parse a JSON object. Typed reads need the record's src/contracts schema: the result is validated, and a
   * corrupt or foreign record is a CorruptObjectError naming the key and the bad fields' paths.
   */
  async getJson(key: string): Promise<unknown>;
  async getJson<S extends z.ZodType>(key: string, schema: S): Promise<z.output<S>>;
  async getJson(key: string, schema?: z.ZodType): Promise<unknown> {
    const value = parseJsonRecord(key, (await this.getBytes(key)).toString('utf8'), this.bucket);
    return schema ? parseRecord(key, schema, value, this.bucket) : value;
  }

  async getJsonOrNull(key: string): Promise<unknown>;
  async getJsonOrNull<S extends z.ZodType>(key: string, schema: S): Promise<z.output<S> | null>;
  async getJsonOrNull(key: string, schema?: z.ZodType): Promise<unknown> {
    try {
      return schema ? await this.getJson(key, schema) : await this.getJson(key);
    } catch (err) {
      if (err instanceof ObjectNotFoundError) return null;
      throw err;
    }
  }

  /** Parse a JSONL object line by line as it downloads. */
  async *readJsonl<T = unknown>(key: string): AsyncGenerator<T> {
    const stream = await this.getStream(key);
    try {
      yield* parseJsonlLines<T>(stream);
    } catch (err) {
      if (err instanceof JsonlLineError) throw new CorruptObjectError(this.bucket, key, err.message, { cause: err });
      throw toStoreError(err, this.ctx('readJsonl', key));
    }
  }

  /** Download to a file atomically (temp file, then rename), creating parent directories. */
  async getFile(key: string, file: string): Promise<{ size: number }> {
    const stream = await this.getStream(key);
    await mkdir(path.dirname(file), { recursive: true });
    const part = `${file}.${randomUUID()}.part`;
    try {
      await this.call('getFile', key, () => pipeline(stream, createWriteStream(part)));
      await rename(part, file);
    } finally {
      await rm(part, { force: true });
    }
    return { size: (await stat(file)).size };
  }

  /** Metadata of an object, or null when there is none. */
  async stat(key: string): Promise<ObjectInfo | null> {
    assertKey(key);
    try {
      const s = await this.client.statObject(this.bucket, key);
      const sha = s.metaData['sha256'];
      return {
        key,
        size: s.size,
        etag: s.etag,
        lastModified: s.lastModified,
        sha256: typeof sha === 'string' ? sha : null,
      };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (code === 'NotFound' || code === 'NoSuchKey') return null;
      throw toStoreError(err, this.ctx('stat', key));
    }
  }

  /** Every object under a prefix, in key order; with `startAfter`, only the keys after it. */
  async *list(prefix: string, startAfter?: string): AsyncGenerator<{ key: string; size: number }> {
    assertKey(prefix, { prefix: true });
    try {
      for await (const o of this.client.listObjectsV2(this.bucket, prefix, true, startAfter)) {
        const item = o as { name?: string; size?: number };
        if (item.name !== undefined) yield { key: item.name, size: item.size ?? 0 };
      }
    } catch (err) {
      throw toStoreError(err, this.ctx('list', prefix));
    }
  }

  /** Delete one object; deleting a missing object succeeds (idempotent). */
  async remove(key: string): Promise<void> {
    assertKey(key);
    await this.call('remove', key, () => this.client.removeObject(this.bucket, key));
  }

  /** Delete everything under a prefix ending in '/'; returns how many objects were deleted. */
  async removePrefix(prefix: string): Promise<number> {
    if (!assertKey(prefix, { prefix: true }).endsWith('/'))
      throw new ObjectStoreError(`removePrefix needs a prefix ending in '/', got ${JSON.stringify(prefix)}`, prefix);
    const all: string[] = [];
    for await (const o of this.list(prefix)) all.push(o.key);
    for (let i = 0; i < all.length; i += 1000) {
      const batch = all.slice(i, i + 1000);
      const results = await this.call('removePrefix', prefix, () => this.client.removeObjects(this.bucket, batch));
      const failed = results.find((r) => r?.Error);
      if (failed?.Error)
        throw new ObjectStoreError(
          `removePrefix ${prefix}: ${failed.Error.Key}: ${failed.Error.Code} ${failed.Error.Message ?? ''}`,
          failed.Error.Key ?? prefix,
        );
    }
    return all.length;
  }

  putDirContentAddressed(dir: string) {
    return putDirContentAddressed(this, dir);
  }

  getDir(prefix: string, dir: string) {
    return getDir(this, prefix, dir);
  }

  getCheckpoint(sha256: string, dir: string) {
    return getCheckpoint(this, sha256, dir);
  }

  /**
   * One signed PUT with the known length and sha256, a file streamed from disk. Never minio's putObject: above
   * 64 MiB it switches to multipart uploads, which the embedded rclone server does not speak.
   */
  private async putSigned(
    key: string,
    body: Buffer | { file: string },
    sha256: string,
    size: number,
    contentType: string,
  ): Promise<PutResult> {
    if (size > MAX_SINGLE_PUT)
      throw new ObjectStoreError(`put ${key}: ${size} bytes exceeds the 5 GiB single-PUT limit`, key);
    const headers = { 'Content-Length': size, 'Content-Type': contentType, 'x-amz-meta-sha256': sha256 };
    await this.call('put', key, async () => {
      const res = await this.client.makeRequestStreamAsync(
        { method: 'PUT', bucketName: this.bucket, objectName: key, headers },
        Buffer.isBuffer(body) ? body : createReadStream(body.file),
        this.opts.signPayload ? sha256 : '',
        [200],
        this.opts.region,
      );
      res.resume();
    });
    return { key, sha256, size };
  }

  private ctx(op: string, key: string | null) {
    return { op, key, bucket: this.bucket, endpoint: this.endpoint };
  }

  private async call<T>(op: string, key: string | null, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      throw toStoreError(err, this.ctx(op, key));
    }
  }
}
