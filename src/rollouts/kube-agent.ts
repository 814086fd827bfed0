import { DEFAULT_ENV_ALLOW_LIST, type RolloutSpec } from './spec.js';

/** Where the agent's wrapper keeps its exit status for the pod's score step (an emptyDir the two share). */
export const STATUS_DIR = '/volt/status';
/** The agent's own writable HOME in the pod (an emptyDir), apart from the workdir the rewards and guards read. */
export const KUBE_HOME = '/volt/home';
/** Seconds between the agent's SIGTERM at its timeout and the SIGKILL, as the local runner's killGraceMs. */
export const KILL_GRACE_SEC = 5;
/**
 * Exit statuses of timeout(1) when it stopped the agent: GNU's 124 after SIGTERM and 137 after the SIGKILL, and
 * busybox's 143 (it exits as the agent did).
 */
const TIMEOUT_STATUSES = [124, 137, 143];

/** The agent's timeout in whole seconds, as the pod enforces it. */
export const agentTimeoutSec = (spec: RolloutSpec) => Math.max(1, Math.ceil(spec.timeoutMs / 1000));

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The agent's argv wrapped for its (init) container, so the pod keeps the local runner's contract:
 * - the environment is the allow-list taken from the image's (what Kubernetes and the runtime add, like HOSTNAME or
 *   KUBERNETES_SERVICE_HOST, is withheld too) plus the contract variables `contract` names;
 * - the rlimits of `limits` (not `processes`: RLIMIT_NPROC counts the uid over the whole node; the pod's pids limit is
 *   the cluster's), then the agent's own timeout: SIGTERM to its process group, SIGKILL after KILL_GRACE_SEC;
 * - its exit status, with ` timed-out` when timeout(1) stopped it, goes to STATUS_DIR for the score step, and the
 *   container itself ends 0 so the score step always runs. No status file means the wrapper never ran the agent.
 * Needs /bin/sh, env, sed, date and timeout in the image.
 */
export function agentWrapper(spec: RolloutSpec, contract: readonly string[]): string[] {
  const keep = [...new Set([...(spec.envAllowList ?? DEFAULT_ENV_ALLOW_LIST), ...contract])];
  const t = agentTimeoutSec(spec);
  const { memoryMb, openFiles, cpuSec } = spec.limits;
  const limits = [`ulimit -d ${memoryMb * 1024}`, `ulimit -n ${openFiles}`, ...(cpuSec ? [`ulimit -t ${cpuSec}`] : [])];
  const script = [
    // Resolved while PATH is still there: the allow-list may leave it out.
    'volt_timeout=$(command -v timeout) && volt_date=$(command -v date) || { echo "volt: the image needs timeout and date" >&2; exit 0; }',
    `volt_keep=${quote(` ${keep.join(' ')} `)}`,
    `for volt_v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p'); do`,
    '  case "$volt_keep" in *" $volt_v "*) ;; *) unset "$volt_v" ;; esac',
    'done',
    `${limits.join(' && ')} || { echo "volt: setting the attempt's limits failed" >&2; exit 0; }`,
    'volt_start=$("$volt_date" +%s)',
    `"$volt_timeout" -k ${KILL_GRACE_SEC} ${t} "$@"`,
    'volt_code=$?',
    // Only at its time: an agent that exits with one of these statuses by itself before then is not timed out.
    `case $volt_code in ${TIMEOUT_STATUSES.join('|')}) [ $(( $("$volt_date" +%s) - volt_start )) -ge ${t - 1} ] && volt_code="$volt_code timed-out" ;; esac`,
    `echo "$volt_code" > ${STATUS_DIR}/agent-exit`,
  ].join('\n');
  return ['/bin/sh', '-c', script, 'volt-agent', ...spec.agent.command];
}
