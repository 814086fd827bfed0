import { z } from 'zod';

/** The name of an environment variable. */
export const envNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'not an environment variable name');

/** A variable an agent may be given or pass through: operator secrets live under VOLT_*, so those never reach it. */
export const agentEnvNameSchema = envNameSchema.refine(
  (n) => !n.startsWith('VOLT_'),
  'VOLT_* variables are never passed to agents',
);
