import type { z } from 'zod';
import { CorruptObjectError } from './errors.js';

const fieldPath = (issue: z.core.$ZodIssue) => issue.path.map(String).join('.') || '(root)';

/** Validate a record read from `key` against its src/contracts schema; a mismatch names the key and every bad field. */
export function parseRecord<S extends z.ZodType>(
  key: string,
  schema: S,
  value: unknown,
  bucket: string | null = null,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues;
  const detail = issues.map((i) => `${fieldPath(i)}: ${i.message}`).join('; ');
  throw new CorruptObjectError(bucket, key, detail, { cause: parsed.error, fields: issues.map(fieldPath) });
}

/** Parse JSON text of the object at `key`; bytes that are not JSON are a CorruptObjectError too. */
export function parseJsonRecord(key: string, text: string, bucket: string | null = null): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CorruptObjectError(bucket, key, `not JSON (${(err as Error).message})`, { cause: err });
  }
}

/** Before a write: a record that does not match its contract is a bug in the writer, caught before it is stored. */
export function checkRecord<S extends z.ZodType>(key: string, schema: S, value: z.input<S>): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues.map((i) => `${fieldPath(i)}: ${i.message}`).join('; ');
  throw new TypeError(`refusing to write ${key}: the record does not match its contract (${detail})`);
}
