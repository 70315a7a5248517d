// Starts a throwaway redis-server on a free 127.0.0.1 port, when `redis-server` is on PATH.
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { pin } from '../pin.mjs';
import { clockTicks, freePort, processCpu } from './proc.mjs';

/** One command's reply as text, over a plain socket (no client library in this process). */
function ask(port, command) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.once('error', reject);
    socket.once('connect', () => socket.write(`${command}\r\n`));
    socket.on('data', (data) => {
      text += data.toString();
      // A bulk string: `$<length>\r\n<text>\r\n`; done once it is whole.
      const length = Number(text.slice(1, text.indexOf('\r\n')));
      if (text.startsWith('$') && Buffer.byteLength(text) >= length + String(length).length + 5) {
        socket.destroy();
        resolve(text);
      }
    });
  });
}

/**
 * Commands redis-server has run so far (`INFO commandstats`): `scripts`, the EVAL/EVALSHA calls,
 * and `inside`, every other command, those the scripts ran included.
 */
async function commandStats(port) {
  const text = await ask(port, 'INFO commandstats');
  let scripts = 0;
  let inside = 0;
  for (const [, name, calls] of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (name === 'info') continue;
    if (name === 'eval' || name === 'evalsha') scripts += Number(calls);
    else inside += Number(calls);
  }
  return { scripts, inside };
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
    /** Commands run so far: `{ scripts, inside }` (see `commandStats`). */
    commands: () => commandStats(port),
    stop: () =>
      new Promise((resolve) => {
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}
