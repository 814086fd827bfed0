import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { parseFrozen } from '../config/errors.js';

export const TEMPORAL_CONFIG_DIR = path.resolve(import.meta.dirname, '../../temporal-config');

const searchAttributesSchema = z.record(
  z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'search attribute names are identifiers'),
  z.enum(['Text', 'Keyword', 'Int', 'Double', 'Bool', 'Datetime', 'KeywordList']),
);

const devServerSchema = z.object({
  logLevel: z.enum(['debug', 'info', 'warn', 'error', 'never']).default('warn'),
  namespaces: z.array(z.string().min(1)).default(['default']),
  dynamicConfig: z.record(z.string(), z.json()).default({}),
  uiDisableNewsFetch: z.boolean().default(true),
});

export type DevServerConfig = z.output<typeof devServerSchema>;
export type SearchAttributes = z.output<typeof searchAttributesSchema>;

function readJson(file: string): unknown {
  return JSON.parse(fs.readFileSync(path.join(TEMPORAL_CONFIG_DIR, file), 'utf8'));
}

/** The dev-server flags and Volt's search attributes, as checked into temporal-config/. */
export function loadTemporalConfig(): {
  server: Readonly<DevServerConfig>;
  searchAttributes: Readonly<SearchAttributes>;
} {
  return {
    server: parseFrozen(devServerSchema, readJson('dev-server.json'), 'temporal-config/dev-server.json'),
    searchAttributes: parseFrozen(
      searchAttributesSchema,
      readJson('search-attributes.json'),
      'temporal-config/search-attributes.json',
    ),
  };
}

export interface DevServerArgsOptions {
  dbFile: string;
  host: string;
  port: number;
  /** null runs headless (no Web UI). */
  uiPort: number | null;
  namespace: string;
}

/** Arguments for `temporal server start-dev`, built from temporal-config/ plus the ports of this stack. */
export function devServerArgs(o: DevServerArgsOptions): string[] {
  const { server, searchAttributes } = loadTemporalConfig();
  const args = ['server', 'start-dev', '--db-filename', o.dbFile, '--ip', o.host, '--port', String(o.port)];
  args.push('--log-level', server.logLevel);
  if (o.uiPort === null) args.push('--headless');
  else {
    args.push('--ui-port', String(o.uiPort));
    if (server.uiDisableNewsFetch) args.push('--ui-disable-news-fetch');
  }
  for (const ns of new Set([...server.namespaces, o.namespace])) if (ns !== 'default') args.push('--namespace', ns);
  for (const [name, type] of Object.entries(searchAttributes)) args.push('--search-attribute', `${name}=${type}`);
  for (const [key, value] of Object.entries(server.dynamicConfig))
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  return args;
}
