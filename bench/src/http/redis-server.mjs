// Starts a throwaway redis-server on a free 127.0.0.1 port, when `redis-server` is on PATH.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { pin } from '../pin.mjs';

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function ping(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('error', () => resolve(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
  });
}

/** Clock ticks per second of /proc's CPU times. */
function clockTicks() {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
  } catch {
    return 100;
  }
}

/**
 * CPU time (user + system) of a process in µs, from /proc (Linux; 10 ms steps at 100 ticks per
 * second); undefined elsewhere.
 */
function processCpu(pid, ticks) {
  try {
    // Fields after the command name, which is in brackets and may hold spaces: utime and stime are 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').at(-1).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / ticks;
  } catch {
    return undefined;
  }
}

/** `{ port, version, cpu, stop }`, or `{ skipped: reason }` when redis-server is not installed. */
export async function startRedis({ core }) {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  } catch {
    return { skipped: 'redis-server is not on PATH (apt-get install redis-server): Redis scenario skipped' };
  }
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  pin(child.pid, core);
  for (let i = 0; i < 100 && !(await ping(port)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await ping(port))) {
    child.kill('SIGKILL');
    return { skipped: 'redis-server did not answer PING within 5 s: Redis scenario skipped' };
  }
  const version =
    execFileSync('redis-server', ['--version'])
      .toString()
      .match(/v=(\S+)/)?.[1] ?? 'unknown';
  const ticks = clockTicks();
  return {
    port,
    version,
    /** redis-server's CPU time so far in µs (undefined where /proc is not there). */
    cpu: () => processCpu(child.pid, ticks),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}
