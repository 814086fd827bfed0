import { readdir, readFile } from 'node:fs/promises';

/** Send a signal to every process of a group; a group that is already gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  state: string;
}

/** Every process visible in /proc, read from /proc/<pid>/stat (Linux only). */
export async function listProcesses(): Promise<ProcInfo[]> {
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  const infos = await Promise.all(
    pids.map(async (pid) => {
      try {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
        // The command name may contain spaces and parentheses, so fields are counted after the last ')'.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return {
          pid: Number(pid),
          state: fields[0] ?? '?',
          ppid: Number(fields[1]),
          pgid: Number(fields[2]),
          sid: Number(fields[3]),
        };
      } catch {
        return null; // exited while we were reading
      }
    }),
  );
  return infos.filter((p): p is ProcInfo => p !== null);
}

/** Live (non-zombie) processes still in the given process group or session. */
export async function survivorsOf(pgid: number): Promise<ProcInfo[]> {
  return (await listProcesses()).filter((p) => (p.pgid === pgid || p.sid === pgid) && p.state !== 'Z');
}

/**
 * Kill every process whose environment holds exactly `entry` (e.g. `OPENAI_API_KEY=<attempt token>`): the
 * agent's descendants that left its session with setsid, which a group kill cannot reach. Returns their pids.
 */
export async function killByEnv(entry: string): Promise<number[]> {
  const needle = Buffer.from(`\0${entry}\0`);
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d) && Number(d) !== process.pid);
  const found = await Promise.all(
    pids.map(async (pid) => {
      try {
        const environ = Buffer.concat([Buffer.from('\0'), await readFile(`/proc/${pid}/environ`)]);
        return environ.includes(needle) ? Number(pid) : null;
      } catch {
        return null; // gone, or another user's process
      }
    }),
  );
  const hits = found.filter((p): p is number => p !== null);
  for (const pid of hits) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* exited meanwhile */
    }
  }
  return hits;
}
