/** A free TCP port on 127.0.0.1, for a server a test starts itself (redis-server, Postgres, a README block). */

import net from 'node:net';

/**
 * Ports handed out come from below Linux's ephemeral range (32768–60999): a port picked there and
 * bound a moment later by another process can be taken in between by any outgoing connection (their
 * source ports come from that range), which a README block once met as EADDRINUSE under load.
 */
const LOWEST = 20_000;
const HIGHEST = 32_767;
/** Ports this process handed out already: never twice. */
const given = new Set<number>();

/** True when `port` can be listened on right now: on `host`, or without one as `listen(port)` does (every interface). */
function isFree(port: number, host?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    const listening = () => server.close(() => resolve(true));
    if (host === undefined) server.listen(port, listening);
    else server.listen(port, host, listening);
  });
}

/**
 * A port nothing listens on right now, chosen at random below the ephemeral range and checked on
 * 127.0.0.1 and on every interface (a README block listens on all of them).
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (HIGHEST - LOWEST + 1));
    if (given.has(port)) continue;
    if ((await isFree(port, '127.0.0.1')) && (await isFree(port))) {
      given.add(port);
      return port;
    }
  }
  throw new Error(`freePort: no free port found between ${LOWEST} and ${HIGHEST} in 200 tries`);
}
