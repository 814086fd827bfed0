import { z } from 'zod';

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** The rule in words, for error messages. */
export const SAFE_ID_RULE = "use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit, no '..'";

/** An id that can be one segment of an object key or a path: it cannot climb out of the prefix it is put under. */
export function isSafeId(value: unknown): value is string {
  return typeof value === 'string' && SAFE_ID.test(value) && !value.includes('..');
}

/** A string field holding a safe id; `what` names it in the error, e.g. 'run id' or 'lineage name'. */
export const safeIdSchema = (what: string) => z.string().refine(isSafeId, `unsafe ${what}: ${SAFE_ID_RULE}`);
