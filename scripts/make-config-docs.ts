/**
 * Writes docs/run-config.md from the zod schema of the run config (src/config/run.ts): every field's path, type,
 * default and bounds come from z.toJSONSchema, its description from the JSDoc comment above it in the source, so the
 * reference cannot drift. `--check` fails if the committed file differs (test/docs/run-config-doc.test.ts runs it).
 *
 *   node --import tsx scripts/make-config-docs.ts [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';
import { runConfigSchema } from '../src/config/run.js';
import { rewardSpecSchema } from '../src/rewards/spec.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const RUN_CONFIG_DOC = path.join(root, 'docs/run-config.md');

type Json = {
  type?: string | string[];
  properties?: Record<string, Json>;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  const?: unknown;
  items?: Json;
  anyOf?: Json[];
  oneOf?: Json[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  pattern?: string;
  format?: string;
  additionalProperties?: Json | boolean;
};

/** JSDoc comments of the object-literal properties under `constName` in `file`, keyed by dotted path. */
function comments(file: string, constName: string, prefix: string): Map<string, string> {
  const source = ts.createSourceFile(file, readFileSync(path.join(root, file), 'utf8'), ts.ScriptTarget.ES2022, true);
  const out = new Map<string, string>();
  const visit = (node: ts.Node, at: string[]): void => {
    if (ts.isPropertyAssignment(node) && (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name))) {
      const here = [...at, node.name.text];
      const doc = ts
        .getJSDocCommentsAndTags(node)
        .map((d) => (typeof d.comment === 'string' ? d.comment : ''))
        .join(' ')
        .replace(/\s+/g, ' ')
        .trim();
      if (doc) out.set([prefix, ...here].filter(Boolean).join('.'), doc);
      ts.forEachChild(node.initializer, (c) => visit(c, here));
      return;
    }
    ts.forEachChild(node, (c) => visit(c, at));
  };
  source.forEachChild((stmt) => {
    if (!ts.isVariableStatement(stmt)) return;
    for (const d of stmt.declarationList.declarations)
      if (ts.isIdentifier(d.name) && d.name.text === constName && d.initializer) visit(d.initializer, []);
  });
  return out;
}

const descriptions = new Map([
  ...comments('src/config/run.ts', 'runConfigSchema', ''),
  ...comments('src/batches/config.ts', 'batchConfigSchema', 'batch'),
  ...comments('src/config/apo.ts', 'apoConfigSchema', 'apo'),
  ...comments('src/rollouts/kube-config.ts', 'kubeRunnerConfigSchema', 'rollouts.kubernetes'),
  ...comments('src/contracts/team.ts', 'teamConfigSchema', 'team'),
  ...comments('src/contracts/team.ts', 'roleMatchSchema', 'team.roles.match'),
]);

const code = (v: unknown) => `\`${JSON.stringify(v)}\``;

function typeOf(s: Json): string {
  if (s.const !== undefined) return code(s.const);
  if (s.enum) return s.enum.map(code).join(' | ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' | ');
  if (s.type === 'array') return `${s.items ? typeOf(s.items) : 'any'}[]`;
  if (s.type === 'object' && !s.properties) return 'map of string';
  return Array.isArray(s.type) ? s.type.join(' | ') : (s.type ?? 'any');
}

function bounds(s: Json): string {
  const b: string[] = [];
  const max = (n: number) => (n >= Number.MAX_SAFE_INTEGER ? null : n);
  if (s.minimum !== undefined) b.push(`≥ ${s.minimum}`);
  if (s.exclusiveMinimum !== undefined) b.push(`> ${s.exclusiveMinimum}`);
  if (s.maximum !== undefined && max(s.maximum) !== null) b.push(`≤ ${s.maximum}`);
  if (s.exclusiveMaximum !== undefined) b.push(`< ${s.exclusiveMaximum}`);
  if (s.minLength !== undefined) b.push(`length ≥ ${s.minLength}`);
  if (s.maxLength !== undefined) b.push(`length ≤ ${s.maxLength}`);
  if (s.minItems !== undefined) b.push(`≥ ${s.minItems} items`);
  if (s.pattern) b.push(`matches \`${s.pattern}\``);
  if (s.format) b.push(s.format);
  return b.join(', ');
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function rows(schema: Json, prefix: string, out: string[]): void {
  for (const [name, s] of Object.entries(schema.properties ?? {})) {
    const at = prefix ? `${prefix}.${name}` : name;
    const required =
      schema.required?.includes(name) && s.default === undefined
        ? '**required**'
        : s.default === undefined
          ? 'optional'
          : code(s.default);
    const isObject = s.type === 'object' && s.properties;
    const type = isObject ? 'object' : at === 'reward' ? 'reward spec (see [rewards](rewards.md))' : typeOf(s);
    out.push(
      `| \`${at}\` | ${cell(type)} | ${cell(required)} | ${cell(bounds(s))} | ${cell(descriptions.get(at.replaceAll('[]', '')) ?? '')} |`,
    );
    if (isObject) rows(s, at, out);
    // An array of objects (team.roles): its items' fields as `<field>[].<name>`.
    else if (s.type === 'array' && s.items?.type === 'object' && s.items.properties) rows(s.items, `${at}[]`, out);
  }
}

export function renderRunConfigDoc(): string {
  const schema = z.toJSONSchema(runConfigSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  const out = [
    '# Run config reference',
    '',
    '<!-- Generated by `node --import tsx scripts/make-config-docs.ts` from src/config/run.ts; do not edit by hand. -->',
    '',
    'A run config is one JSON object: the only argument of the `trainingRun` and `promptOptimization` workflows, the file',
    '`volt train` / `volt optimize-prompt` read. Unknown keys are errors; every field with a default may be left out.',
    'Examples: `examples/calculator/run.json`, `examples/calculator/apo.json`. Cross-field rules (checked after the fields):',
    '`rollouts.kubernetes` is required when `rollouts.runner` is `kubernetes`; `batch.minGroupSize` ≤ `rollouts.groupSize`;',
    '`trainer.microBatchSize` ≤ `trainer.minibatchSize`; `apo.optimizer` is required for the `textual_gradient` strategy;',
    '`timeouts.rolloutsSec` ≥ `agent.timeoutSec`.',
    '',
    '| field | type | default | bounds | what |',
    '|---|---|---|---|---|',
  ];
  rows(schema, '', out);
  out.push(
    '',
    '## Reward kinds',
    '',
    'The fields of each `reward.kind` (details and examples in [rewards.md](rewards.md)).',
    '',
  );
  const rewards = z.toJSONSchema(rewardSpecSchema, { io: 'input', unrepresentable: 'any' }) as Json;
  for (const variant of rewards.oneOf ?? rewards.anyOf ?? []) {
    const kind = String(variant.properties?.kind?.const);
    const constName = `${kind.replace(/_(\w)/g, (_, c: string) => c.toUpperCase())}Schema`;
    const docs = comments('src/rewards/spec.ts', constName, '');
    out.push(`### \`${kind}\``, '', '| field | type | default | bounds | what |', '|---|---|---|---|---|');
    for (const [name, s] of Object.entries(variant.properties ?? {})) {
      if (name === 'kind') continue;
      const required =
        variant.required?.includes(name) && s.default === undefined
          ? '**required**'
          : s.default === undefined
            ? 'optional'
            : code(s.default);
      out.push(
        `| \`${name}\` | ${cell(typeOf(s))} | ${cell(required)} | ${cell(bounds(s))} | ${cell(docs.get(name) ?? '')} |`,
      );
    }
    out.push('');
  }
  return out.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const text = renderRunConfigDoc();
  if (process.argv.includes('--check')) {
    const current = readFileSync(RUN_CONFIG_DOC, 'utf8');
    if (current !== text) {
      console.error('docs/run-config.md is stale: run node --import tsx scripts/make-config-docs.ts');
      process.exit(1);
    }
  } else {
    writeFileSync(RUN_CONFIG_DOC, text);
    console.log(`wrote ${path.relative(root, RUN_CONFIG_DOC)}`);
  }
}
