import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseFrozen } from './errors.js';

/** The secrets of one local installation, generated once into `<dataDir>/credentials.json` (mode 0600). */
export const credentialsSchema = z.strictObject({
  VOLT_S3_ACCESS_KEY: z.string().min(3),
  VOLT_S3_SECRET_KEY: z.string().min(8),
  VOLT_GATEWAY_ADMIN_KEY: z.string().min(8),
  VOLT_MODEL_SERVER_ADMIN_KEY: z.string().min(8),
});
export type InstallationCredentials = z.output<typeof credentialsSchema>;

export const credentialsFile = (dataDir: string) => path.join(dataDir, 'credentials.json');

const secret = () => randomBytes(24).toString('base64url');

/**
 * This installation's credentials: read from the data dir, or generated and written there first (0600, created
 * exclusively, so two processes starting at once end up with the same file).
 */
export function installationCredentials(dataDir: string): Readonly<InstallationCredentials> {
  const file = credentialsFile(dataDir);
  const fresh: InstallationCredentials = {
    VOLT_S3_ACCESS_KEY: `volt-${randomBytes(6).toString('hex')}`,
    VOLT_S3_SECRET_KEY: secret(),
    VOLT_GATEWAY_ADMIN_KEY: secret(),
    VOLT_MODEL_SERVER_ADMIN_KEY: secret(),
  };
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${JSON.stringify(fresh, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
    return Object.freeze(fresh);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
      throw new Error(`${file}: cannot create the installation credentials: ${(err as Error).message}`);
  }
  // Someone may have loosened it by hand: the file holds the admin keys.
  chmodSync(file, 0o600);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message} (delete it to generate new credentials)`);
  }
  return parseFrozen(credentialsSchema, raw, file);
}
