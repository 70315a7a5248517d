/** A free TCP port on 127.0.0.1, for a server a test starts itself (redis-server, Postgres, a README block). */

import net from 'node:net';

/** A port nothing listens on right now: the OS picks it, and it is given back at once. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
