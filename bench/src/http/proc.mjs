// What the bench reads of other processes (Linux /proc), and a free loopback port: shared by the
// redis-server and Postgres helpers.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Clock ticks per second of /proc's CPU times. */
export function clockTicks() {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
  } catch {
    return 100;
  }
}

/** The fields of /proc/<pid>/stat after the command name (which is in brackets and may hold spaces). */
function statFields(pid) {
  return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
}

/**
 * CPU time (user + system) of a process in µs, from /proc (Linux; 10 ms steps at 100 ticks per
 * second); undefined elsewhere.
 */
export function processCpu(pid, ticks) {
  try {
    // utime and stime are the 12th and 13th fields after the name.
    const fields = statFields(pid);
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticks;
  } catch {
    return undefined;
  }
}

/** The pids of a process's children (/proc's children list, else pgrep). */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);
  } catch {
    try {
      return execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' })
        .split('\n')
        .filter(Boolean)
        .map(Number);
    } catch {
      return [];
    }
  }
}

/** CPU time a single-threaded process has run, in µs: /proc/<pid>/schedstat (ns), else /proc/<pid>/stat (ticks). */
function ownCpu(pid, ticks) {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e3;
  } catch {
    return processCpu(pid, ticks);
  }
}

/**
 * CPU time in µs of a process and its children, living and exited: each living one's own time
 * (schedstat, in ns, where the kernel has it: summed over dozens of processes, /proc/stat's 10 ms
 * steps would add up), plus the time of the children it has already reaped (cutime + cstime, in
 * ticks). Fits a Postgres cluster: the postmaster forks every backend and worker and reaps them.
 * Undefined where /proc is not there or the process has gone.
 */
export function treeCpu(pid, ticks) {
  let fields;
  try {
    fields = statFields(pid);
  } catch {
    return undefined;
  }
  // cutime and cstime: the 14th and 15th fields after the name.
  let total = ((Number(fields[13]) + Number(fields[14])) * 1e6) / ticks + (ownCpu(pid, ticks) ?? 0);
  for (const child of childrenOf(pid)) total += ownCpu(child, ticks) ?? 0;
  return total;
}
