import { listedFiles, type WorkdirFiles } from '../rewards/workdir-files.js';

export const SNAPSHOT_DIR = '/volt/snap';
/** Config files whose text a guard reads (a pytest section in them), reported by the pod with the listing. */
const TEXT_FILES = ['tox.ini', 'setup.cfg', 'pyproject.toml'];
const MAX_TEXTS = 20;
const MAX_TEXT_BYTES = 64 * 1024;

/** Shell that lists every regular file under the cwd as sha256sum does (`<hash>  ./<path>`); needs find and sha256sum. */
export const hashListing = 'find . -type f -exec sha256sum {} +';

/** The prepare step's listing of the workdir after the task's setup, before the agent: in a volume the agent never mounts. */
export const snapshotScript = `${hashListing} > ${SNAPSHOT_DIR}/before && touch ${SNAPSHOT_DIR}/done`;

/** Shell that prints the listing before the agent (from the prepare step) and now, and the guarded config texts. */
export function reportFilesScript(nonce: string): string[] {
  const names = TEXT_FILES.map((n) => `-name ${n}`).join(' -o ');
  return [
    // Only a listing the prepare step finished counts: a missing one is no report, never an empty workdir.
    `if [ -f ${SNAPSHOT_DIR}/done ]; then echo "::${nonce} files-before-begin"; cat ${SNAPSHOT_DIR}/before; echo "::${nonce} files-before-end"; fi`,
    `echo "::${nonce} files-after-begin"; ${hashListing} 2>/dev/null; echo "::${nonce} files-after-end"`,
    `find . -type f \\( ${names} \\) 2>/dev/null | head -n ${MAX_TEXTS} | while IFS= read -r f; do`,
    `  echo "::${nonce} text-begin $f"; head -c ${MAX_TEXT_BYTES} "$f"; echo; echo "::${nonce} text-end"`,
    'done',
  ];
}

/** sha256sum's lines by path (`./` stripped); a name with a newline or backslash comes escaped, with a leading `\`. */
function parseListing(text: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const line of text.split('\n')) {
    const escaped = line.startsWith('\\');
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(escaped ? line.slice(1) : line);
    if (!m) continue;
    let name = m[2] as string;
    if (escaped) name = name.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
    files.set(name.replace(/^\.\//, ''), m[1] as string);
  }
  return files;
}

/** The workdir's files before and after the agent as the pod reported them, or null when the report is missing. */
export function parseFilesReport(log: string, nonce: string): { before: WorkdirFiles; after: WorkdirFiles } | null {
  const section = (name: string) =>
    new RegExp(`::${nonce} ${name}-begin\\n([\\s\\S]*?)::${nonce} ${name}-end`).exec(log)?.[1];
  const before = section('files-before');
  const after = section('files-after');
  if (before === undefined || after === undefined) return null;
  const texts = new Map<string, string>();
  for (const m of log.matchAll(new RegExp(`::${nonce} text-begin \\./(.+)\\n([\\s\\S]*?)\\n::${nonce} text-end`, 'g')))
    texts.set(m[1] as string, m[2] as string);
  return { before: listedFiles(parseListing(before), new Map()), after: listedFiles(parseListing(after), texts) };
}
