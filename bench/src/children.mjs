// Child processes with a small request/answer protocol over IPC.
import { fork } from 'node:child_process';
import { pin } from './pin.mjs';

/**
 * Forks `script`, pins it to `core`, and waits for its first message (`{ ready: … }`).
 * Returns `{ ready, call(message) => Promise<answer>, stop() }`.
 */
export async function startChild(script, { args = [], core, execArgv = [], env } = {}) {
  const child = fork(script, args, {
    execArgv,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  pin(child.pid, core);
  const pending = [];
  let exited = null;
  child.on('message', (message) => pending.shift()?.resolve(message));
  child.on('exit', (code, signal) => {
    exited = new Error(`${script} exited (${signal ?? code})`);
    for (const p of pending.splice(0)) p.reject(exited);
  });
  const next = () =>
    new Promise((resolve, reject) => {
      if (exited) reject(exited);
      else pending.push({ resolve, reject });
    });
  const ready = await next();
  if (ready.error) throw new Error(`${script}: ${ready.error}`);
  return {
    ready,
    pid: child.pid,
    async call(message) {
      const answer = next();
      child.send(message);
      const result = await answer;
      if (result.error) throw new Error(`${script}: ${result.error}`);
      return result;
    },
    stop() {
      if (exited) return Promise.resolve();
      return new Promise((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      });
    },
  };
}

/** In a child: answers each IPC message with `handler(message)`, errors as `{ error }`. */
export function serve(handler) {
  process.on('message', async (message) => {
    try {
      process.send(await handler(message));
    } catch (error) {
      process.send({ error: error?.stack ?? String(error) });
    }
  });
  process.on('SIGTERM', () => process.exit(0));
}
