// Starts a throwaway redis-server on a free 127.0.0.1 port, when `redis-server` is on PATH.
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { pin } from '../pin.mjs';
import { clockTicks, freePort, processCpu } from './proc.mjs';

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
