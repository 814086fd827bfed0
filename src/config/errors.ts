import type { z } from 'zod';

/** A config value failed validation; the message names every bad field by its path. */
export class ConfigError extends Error {
  readonly issues: { path: string; message: string }[];

  constructor(what: string, error: z.ZodError) {
    const issues = error.issues.map((i) => ({ path: i.path.length ? i.path.join('.') : '(root)', message: i.message }));
    super(`invalid ${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** Parse with a schema, throw ConfigError naming the paths, and deep-freeze the result. */
export function parseFrozen<S extends z.ZodType>(schema: S, value: unknown, what: string): Readonly<z.output<S>> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(what, result.error);
  return deepFreeze(result.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
