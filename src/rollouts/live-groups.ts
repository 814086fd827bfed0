import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { killByEnv, signalGroup } from './process-group.js';

/** One agent attempt that may be running: written before the agent starts, removed once its group is gone. */
export interface LiveGroupRecord {
  /** The gateway token of the attempt: closed when the attempt is abandoned; also finds escaped processes. */
  token: string;
  /** The agent's process group (= its leader's pid), null until it was spawned. */
  pgid: number | null;
  /** The leader's start time in clock ticks (/proc/<pid>/stat), so a reused pid is never killed. */
  startTicks: string | null;
  /** The worker process that started it; records of a dead owner are reaped. */
  owner: { pid: number; startTicks: string };
  attempt: string;
}

/** Start time of a live process in clock ticks (field 22 of /proc/<pid>/stat), null when it is gone. */
export function startTicksOf(pid: number): Promise<string | null> {
  return readFile(`/proc/${pid}/stat`, 'utf8').then(
    (stat) => stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null,
    () => null,
  );
}

/**
 * A directory of live agent attempts shared by the workers of one machine. A worker that dies (SIGKILL, OOM)
 * leaves its agents running, detached in their own groups; whoever reaps next (a restarted worker, any worker's
 * next launchRollouts) kills their groups and closes their gateway tokens.
 */
export class LiveGroups {
  private readonly owner: Promise<LiveGroupRecord['owner']>;

  constructor(private readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.owner = startTicksOf(process.pid).then((t) => ({ pid: process.pid, startTicks: t ?? '' }));
  }

  /** Record an attempt about to start (synchronous writes: the agent is spawned right after). */
  async open(token: string, attempt: string): Promise<{ spawned(pgid: number | null): void; close(): Promise<void> }> {
    const file = path.join(this.dir, `${token.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
    const record: LiveGroupRecord = { token, pgid: null, startTicks: null, owner: await this.owner, attempt };
    let closed = false;
    const write = () => {
      if (closed) return;
      writeFileSync(`${file}.tmp`, JSON.stringify(record));
      renameSync(`${file}.tmp`, file);
    };
    write();
    return {
      spawned(pgid) {
        record.pgid = pgid;
        write();
        // The leader was just spawned, so its pid cannot have been reused yet.
        if (pgid !== null)
          void startTicksOf(pgid).then(
            (t) => ((record.startTicks = t), write()),
            () => undefined,
          );
      },
      close: async () => {
        closed = true;
        rmSync(file, { force: true });
      },
    };
  }

  /** Kill the groups of attempts whose worker is gone and close their tokens; returns what was reaped. */
  async reap(closeToken: (token: string) => Promise<unknown>): Promise<LiveGroupRecord[]> {
    const reaped: LiveGroupRecord[] = [];
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(this.dir, name);
      let record: LiveGroupRecord;
      try {
        record = JSON.parse(await readFile(file, 'utf8')) as LiveGroupRecord;
      } catch {
        continue; // being written by its owner
      }
      if ((await startTicksOf(record.owner.pid)) === record.owner.startTicks) continue; // its worker still runs it
      if (record.pgid !== null) {
        const leader = await startTicksOf(record.pgid);
        // A leader with another start time is an unrelated process that got the pid; a gone leader may leave its group.
        if (leader === null || leader === record.startTicks || record.startTicks === null)
          signalGroup(record.pgid, 'SIGKILL');
      }
      await killByEnv(`OPENAI_API_KEY=${record.token}`);
      try {
        await closeToken(record.token);
      } catch {
        continue; // gateway unreachable: the group is dead; the token is closed at the next reap
      }
      await rm(file, { force: true });
      reaped.push(record);
    }
    return reaped;
  }
}
