/**
 * Splits the node:test files into two layers by what they start, so nobody keeps a list by hand:
 *   integration: the file starts a service itself, or calls a test/ helper that does (transitively): a Temporal dev
 *                server or S3 server (test/helpers/services.ts, src/stack), the Python model server, the `volt` CLI
 *                as a process — minutes;
 *   unit:        everything else: pure code, app.inject, FAKE servers on loopback, agent processes, Temporal's
 *                in-memory TestWorkflowEnvironment with stub activities, history replay — seconds per file.
 * A helper counts by the functions a test imports from it, not by the module: `specFor` from rollouts/fixtures.ts
 * is unit, `startLogStore` from the same file is integration.
 *
 *   node --import tsx scripts/test-layers.ts unit|integration [--why]     # one file per line, sorted
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type TestLayer = 'unit' | 'integration';

/** What starting a service looks like in test code. */
const STARTS_A_SERVICE: { what: string; pattern: RegExp }[] = [
  { what: 'Temporal/S3 test services', pattern: /\bstartTestServices\s*\(/ },
  { what: 'a Temporal dev server', pattern: /\bstartTemporalServer\s*\(/ },
  { what: 'an S3 server', pattern: /\bstartS3Server\s*\(/ },
  { what: 'the Python model server', pattern: /volt_trainer\.serve\b/ },
  { what: 'the volt CLI', pattern: /join\([^)]*'bin\/volt\.mjs'\)/ },
];

interface Imported {
  name: string;
  from: string;
}

function importsOf(file: string, source: string): Imported[] {
  const out: Imported[] = [];
  for (const m of source.matchAll(/import\s+(?!type\b)\{([^}]*)\}\s*from\s*'(\.{1,2}\/[^']+)'/g)) {
    const from = path.resolve(path.dirname(file), m[2]!).replace(/\.js$/, '.ts');
    for (const part of m[1]!.split(',')) {
      const [name, alias] = part
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/);
      if (name && !part.trim().startsWith('type ')) out.push({ name: alias ?? name, from: `${from}#${name}` });
    }
  }
  return out;
}

/** Top-level declarations of a module: name → its text (up to the next top-level declaration). */
function declarations(source: string): Map<string, string> {
  const decl = /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class)\s+([A-Za-z_$][\w$]*)/gm;
  const starts = [...source.matchAll(decl)];
  return new Map(starts.map((m, i) => [m[1]!, source.slice(m.index, starts[i + 1]?.index ?? source.length)]));
}

export class TestLayerClassifier {
  private readonly starters = new Map<string, string | null>();

  constructor(private readonly testRoot: string) {}

  /** Why a piece of code in `file` starts a service (null: it does not). */
  private startsInText(file: string, text: string, imports: Imported[], depth: number): string | null {
    const hit = STARTS_A_SERVICE.find((s) => s.pattern.test(text));
    if (hit) return `${path.relative(this.testRoot, file)} starts ${hit.what}`;
    for (const imp of imports) {
      if (!new RegExp(`\\b${imp.name.replace(/\$/g, '\\$')}\\b`).test(text)) continue;
      const why = this.starterWhy(imp.from, depth + 1);
      if (why) return why;
    }
    return null;
  }

  /** `module#name`: does calling that export of a test/ helper start a service? */
  private starterWhy(key: string, depth: number): string | null {
    if (this.starters.has(key)) return this.starters.get(key)!;
    const [file, name] = key.split('#') as [string, string];
    this.starters.set(key, null);
    if (depth > 20 || !file.startsWith(this.testRoot + path.sep) || !existsSync(file)) return null;
    const source = readFileSync(file, 'utf8');
    const decls = declarations(source);
    const imports = importsOf(file, source);
    const locals: Imported[] = [...decls.keys()]
      .filter((n) => n !== name)
      .map((n) => ({ name: n, from: `${file}#${n}` }));
    const why = this.startsInText(file, decls.get(name) ?? '', [...imports, ...locals], depth);
    this.starters.set(key, why);
    return why;
  }

  classify(file: string): { layer: TestLayer; reason?: string } {
    const abs = path.resolve(file);
    const source = readFileSync(abs, 'utf8');
    const why = this.startsInText(abs, source, importsOf(abs, source), 0);
    return why ? { layer: 'integration', reason: why } : { layer: 'unit' };
  }
}

/** Every *.test.ts under testRoot (as `<testRoot's name>/<path>`), sorted, with its layer. */
export function testLayers(testRoot: string): { file: string; layer: TestLayer; reason?: string }[] {
  const root = path.resolve(testRoot);
  const classifier = new TestLayerClassifier(root);
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .sort();
  return files.map((f) => ({ file: path.join(path.basename(root), f), ...classifier.classify(path.join(root, f)) }));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [layer, flag] = process.argv.slice(2);
  if (layer !== 'unit' && layer !== 'integration') {
    console.error('usage: test-layers.ts unit|integration [--why]');
    process.exit(2);
  }
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'test');
  for (const t of testLayers(root))
    if (t.layer === layer) console.log(flag === '--why' && t.reason ? `${t.file}\t${t.reason}` : t.file);
}
