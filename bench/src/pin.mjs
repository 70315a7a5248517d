// Pins processes to cores with util-linux `taskset`, where the machine has it and two cores or more.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

function hasTaskset() {
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const cores = availableParallelism();
const usable = cores >= 2 && hasTaskset();

/** What pinning this run can do, for the report. */
export const pinning = {
  cores,
  enabled: usable,
  note: usable
    ? 'servers on core 0, load generator and in-process benchmarks on core 1 (taskset)'
    : cores < 2
      ? 'one core only: processes are not pinned, load generator and server share it'
      : 'taskset not found (util-linux): processes are not pinned',
};

/** Core for servers, and for the load generator / in-process benchmarks. */
export const CORE = { server: 0, client: 1 };

/** Pins every thread of a running process to one core; a no-op where pinning is unavailable. */
export function pin(pid, core) {
  if (!usable) return false;
  try {
    execFileSync('taskset', ['-a', '-c', '-p', String(core), String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A command line that starts `command` pinned to one core (`taskset -c core command …`), so that
 * every process it forks, however deep, inherits the pinning; unchanged where pinning is unavailable.
 * Returns `[command, args]`.
 */
export function pinnedCommand(core, command, args) {
  return usable ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];
}
