import { randomBytes } from 'node:crypto';
import type { ProcessOutcome, RunInWorkdir } from '../rewards/run-process.js';
import type { WorkdirFiles } from '../rewards/workdir-files.js';
import { STATUS_DIR } from './kube-agent.js';
import { parseFilesReport, reportFilesScript, snapshotScript } from './kube-files.js';
import type { RolloutSpec } from './spec.js';

export const SCORE_CONTAINER = 'score';
export const PREPARE_CONTAINER = 'prepare';
export const OUTPUT_DIR = '/volt/out';
/** VOLT_OUTPUT_FILE in every rollout pod: the score step reads it back as the local runner reads its file. */
export const OUTPUT_FILE = `${OUTPUT_DIR}/output.txt`;
export const HIDDEN_DIR = '/volt/hidden';
/** Annotation of the pod template holding hidden file i (mounted by the downward API into the score container only). */
export const hiddenAnnotation = (i: number) => `volt.dev/hidden-${i}`;
const MAX_BYTES = 64 * 1024;

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The pod runs a prepare step before the agent for the task's setup and the files' hashes before the agent. */
export const preparesInPod = (spec: RolloutSpec) => spec.setup !== null || spec.reportFiles;
/** The checks' key: a check is its argv and its stdin. */
const checkKey = (argv: readonly string[], input: string | undefined) => JSON.stringify([argv, input ?? null]);

/**
 * The prepare step (an init container before the agent's): the task's setup in the workdir, then, when the reward
 * reads file hashes, the workdir's listing into a volume only the scoring step mounts. Exits non-zero on failure.
 */
export function prepareScript(spec: RolloutSpec): string {
  const lines = ['cd /workspace || exit 1'];
  if (spec.setup)
    lines.push(
      `${spec.setup.map(quote).join(' ')} < /dev/null || { echo "volt: task setup failed with $?" >&2; exit 1; }`,
    );
  if (spec.reportFiles) lines.push(`${snapshotScript} || { echo 'volt: listing the workdir failed' >&2; exit 1; }`);
  return lines.join('\n');
}

/**
 * The score step's shell script, run in every rollout pod's second container after the agent's (init) container
 * ended: write the hidden files, report the agent's exit status and its output file (a regular file only, its first
 * 64 KiB, as the local runner reads it), then run each check in the workdir under
 * `timeout`, printing its output between markers that carry a per-attempt nonce (never visible to the agent, so
 * nothing it prints can forge a result). Needs /bin/sh, head and timeout in the image.
 */
export function scoringScript(spec: RolloutSpec, nonce: string): string {
  const lines = ['cd /workspace || exit 1'];
  Object.keys(spec.hiddenFiles).forEach((rel, i) => {
    // Whatever the agent left on the path or its parents goes first, so nothing is written through its links.
    const parents = rel
      .split('/')
      .slice(0, -1)
      .map((_, j, all) => all.slice(0, j + 1).join('/'));
    for (const dir of parents)
      lines.push(
        `{ [ -d ${quote(dir)} ] && [ ! -L ${quote(dir)} ]; } || { rm -rf -- ${quote(dir)}; mkdir -- ${quote(dir)}; }`,
      );
    lines.push(`rm -rf -- ${quote(rel)}; cat ${HIDDEN_DIR}/h${i} > ${quote(rel)}`);
  });
  lines.push(`echo "::${nonce} agent-exit $(cat ${STATUS_DIR}/agent-exit 2>/dev/null || echo none)"`);
  lines.push(
    `if [ -f ${OUTPUT_FILE} ] && [ ! -L ${OUTPUT_FILE} ]; then echo "::${nonce} output-begin"; head -c ${MAX_BYTES} ${OUTPUT_FILE}; echo; echo "::${nonce} output-end"; fi`,
  );
  spec.scoringCommands.forEach((c, i) => {
    const argv = c.argv.map(quote).join(' ');
    const stdin = c.input === undefined ? '< /dev/null' : `<<'VOLT_INPUT_${nonce}'\n${c.input}\nVOLT_INPUT_${nonce}`;
    lines.push(
      `timeout ${Math.max(1, Math.ceil(c.timeoutMs / 1000))} ${argv} > /tmp/volt-score-${i} 2> /tmp/volt-score-${i}.err ${stdin}`,
      'code=$?',
    );
    lines.push(
      `echo "::${nonce} begin ${i}"; head -c ${MAX_BYTES} /tmp/volt-score-${i}; echo; echo "::${nonce} stderr ${i}"`,
    );
    lines.push(`head -c ${MAX_BYTES} /tmp/volt-score-${i}.err; echo; echo "::${nonce} end ${i} $code"`);
  });
  // After the hidden files are in place, as on the local runner (the guards leave them out).
  if (spec.reportFiles) lines.push(...reportFilesScript(nonce));
  return lines.join('\n');
}

export const newNonce = () => randomBytes(12).toString('hex');

export interface PodScoring {
  /** The agent's exit status as its shell saw it (128 + n when signal n killed it); null when it never ran. */
  agentExit: number | null;
  /** The agent's own timeout stopped it. */
  timedOut: boolean;
  /** The output file's text; null when the agent wrote none. */
  outputText: string | null;
  /** ProcessOutcome of each check, by checkKey. */
  outcomes: Map<string, ProcessOutcome>;
  /** The workdir's files before and after the agent, when the spec asked for them. */
  files: { before: WorkdirFiles; after: WorkdirFiles } | null;
}

/** What the score container's log says, or null when it never reported (the step did not run or was cut off). */
export function parseScoringLog(log: string, spec: RolloutSpec, nonce: string): PodScoring | null {
  const exit = new RegExp(`^::${nonce} agent-exit (\\d+|none)( timed-out)?$`, 'm').exec(log);
  if (!exit) return null;
  const output = new RegExp(`::${nonce} output-begin\\n([\\s\\S]*?)\\n::${nonce} output-end`).exec(log);
  const outcomes = new Map<string, ProcessOutcome>();
  spec.scoringCommands.forEach((c, i) => {
    const m = new RegExp(
      `::${nonce} begin ${i}\\n([\\s\\S]*?)\\n::${nonce} stderr ${i}\\n([\\s\\S]*?)\\n::${nonce} end ${i} (\\d+)`,
    ).exec(log);
    if (!m) return;
    const code = Number(m[3]);
    // timeout(1) exits 124 when it had to stop the check.
    outcomes.set(checkKey(c.argv, c.input), {
      exitCode: code,
      timedOut: code === 124,
      stdout: m[1] ?? '',
      stderr: m[2] ?? '',
    });
  });
  const files = spec.reportFiles ? parseFilesReport(log, nonce) : null;
  if (spec.reportFiles && !files) return null;
  return {
    files,
    agentExit: exit[1] === 'none' ? null : Number(exit[1]),
    timedOut: exit[2] !== undefined,
    outputText: output ? (output[1] as string) : null,
    outcomes,
  };
}

/** The exec the reward parts get on Kubernetes: the checks already ran in the pod; each call reads its result. */
export function podExec(scoring: PodScoring): RunInWorkdir {
  return (argv, opts) => {
    const outcome = scoring.outcomes.get(checkKey(argv, opts.input));
    if (!outcome)
      return Promise.reject(
        new Error(`${JSON.stringify(argv)} was not run in the pod's scoring step (only rollout.scoringCommands are)`),
      );
    return Promise.resolve(outcome);
  };
}
