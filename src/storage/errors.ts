/** Typed object-store failures, so callers branch on a class instead of parsing S3 error codes. */
export class ObjectStoreError extends Error {
  readonly key: string | null;

  constructor(message: string, key: string | null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ObjectStoreError';
    this.key = key;
  }
}

export class ObjectNotFoundError extends ObjectStoreError {
  constructor(bucket: string, key: string, options?: { cause?: unknown }) {
    super(`object not found: s3://${bucket}/${key}`, key, options);
    this.name = 'ObjectNotFoundError';
  }
}

export class BucketNotFoundError extends ObjectStoreError {
  readonly bucket: string;

  constructor(bucket: string, options?: { cause?: unknown }) {
    super(`bucket not found: s3://${bucket} (run ensureBucket() first)`, null, options);
    this.name = 'BucketNotFoundError';
    this.bucket = bucket;
  }
}

/**
 * The object exists but its bytes are not the record the reader expects (bad JSON, a JSONL line that does not parse,
 * a record that fails its src/contracts schema). `fields` are the paths of the bad fields; retrying cannot fix it.
 */
export class CorruptObjectError extends ObjectStoreError {
  readonly fields: string[];

  constructor(bucket: string | null, key: string, detail: string, options?: { cause?: unknown; fields?: string[] }) {
    super(`corrupt object ${bucket === null ? key : `s3://${bucket}/${key}`}: ${detail}`, key, options);
    this.name = 'CorruptObjectError';
    this.fields = options?.fields ?? [];
  }
}

/** The server could not be reached or refused the credentials: a retryable infrastructure failure. */
export class ObjectStoreUnavailableError extends ObjectStoreError {
  constructor(endpoint: string, detail: string, options?: { cause?: unknown }) {
    super(`object store ${endpoint} unavailable: ${detail}`, null, options);
    this.name = 'ObjectStoreUnavailableError';
  }
}

const NOT_FOUND = new Set(['NoSuchKey', 'NotFound']);
const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);

/** The store could not be reached at all (connection refused, reset, timed out): worth waiting out, unlike bad keys. */
export function isStoreUnreachable(err: unknown): boolean {
  const code = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
  return err instanceof ObjectStoreUnavailableError && typeof code === 'string' && NETWORK.has(code);
}

/** Map a minio/network error from operation `op` on `key` to one of the typed errors above. */
export function toStoreError(
  err: unknown,
  ctx: { op: string; bucket: string; endpoint: string; key: string | null },
): Error {
  if (err instanceof ObjectStoreError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'NoSuchBucket') return new BucketNotFoundError(ctx.bucket, { cause: err });
  if (ctx.key !== null && typeof code === 'string' && NOT_FOUND.has(code)) {
    return new ObjectNotFoundError(ctx.bucket, ctx.key, { cause: err });
  }
  const message = err instanceof Error ? err.message : String(err);
  if (typeof code === 'string' && NETWORK.has(code))
    return new ObjectStoreUnavailableError(ctx.endpoint, `${code} during ${ctx.op}`, { cause: err });
  if (code === 'InvalidAccessKeyId' || code === 'SignatureDoesNotMatch' || code === 'AccessDenied') {
    return new ObjectStoreUnavailableError(
      ctx.endpoint,
      `${code} during ${ctx.op} (check VOLT_S3_ACCESS_KEY / VOLT_S3_SECRET_KEY)`,
      { cause: err },
    );
  }
  const where = ctx.key === null ? `s3://${ctx.bucket}` : `s3://${ctx.bucket}/${ctx.key}`;
  return new ObjectStoreError(
    `${ctx.op} ${where} failed: ${typeof code === 'string' ? `${code}: ` : ''}${message}`,
    ctx.key,
    { cause: err },
  );
}
