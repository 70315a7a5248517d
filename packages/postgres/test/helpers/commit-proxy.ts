/**
 * A TCP proxy between node-postgres and a real Postgres that can lose a `COMMIT` at the exact moment
 * a test needs: the commit reaches Postgres and its answer is lost (the connection drops, or the
 * answer never comes), the commit never reaches Postgres, or the commit is held until the test has
 * frozen Postgres. Everything else is passed through untouched.
 */

import net from 'node:net';

/** What to do with the next `COMMIT` a client sends through the proxy. */
export type CommitFault =
  /** Forward it; once Postgres has answered, drop the answer and close the client's connection. */
  | 'answer-lost-connection-dropped'
  /** Forward it; drop Postgres's answers from then on, leaving the client's connection open (it times out). */
  | 'answer-lost-silently'
  /** Never forward it: close both sides (Postgres rolls the transaction back). */
  | 'never-sent'
  /** Hold it until `forward()` is called (freeze Postgres first), then go on as a plain proxy. */
  | 'held';

export interface CommitProxy {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`, through the proxy. */
  readonly url: string;
  /** Arms `fault` for the next `COMMIT`; resolves once that `COMMIT` has reached the proxy. */
  trap(fault: CommitFault): { seen: Promise<void>; forward(): void };
  close(): Promise<void>;
}

/**
 * The end of a simple query (node-postgres' 'Q' message, text then a NUL) that commits: `COMMIT`
 * alone, or PostgresTransactions' record and COMMIT sent in one round trip.
 */
const COMMIT = Buffer.from('COMMIT\0');

export async function startCommitProxy(postgresPort: number): Promise<CommitProxy> {
  let armed: { fault: CommitFault; seen: () => void; forward: () => void; held: Promise<void> } | undefined;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(postgresPort, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    client.on('close', () => {
      sockets.delete(client);
      upstream.end();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pause();
    upstream.once('connect', () => client.resume());

    let answersLost = false;
    let dropOnAnswer = false;
    upstream.on('data', (chunk) => {
      if (dropOnAnswer) {
        client.destroy();
        upstream.end();
        return;
      }
      if (!answersLost) client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      const trap = armed;
      if (trap === undefined || !chunk.includes(COMMIT)) {
        upstream.write(chunk);
        return;
      }
      armed = undefined;
      trap.seen();
      switch (trap.fault) {
        case 'answer-lost-connection-dropped':
          dropOnAnswer = true;
          upstream.write(chunk);
          break;
        case 'answer-lost-silently':
          answersLost = true;
          upstream.write(chunk);
          break;
        case 'never-sent':
          upstream.destroy();
          client.destroy();
          break;
        case 'held':
          client.pause();
          void trap.held.then(() => {
            upstream.write(chunk);
            client.resume();
          });
          break;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    trap(fault) {
      let seen: () => void = () => {};
      let forward: () => void = () => {};
      const seenPromise = new Promise<void>((resolve) => {
        seen = resolve;
      });
      const held = new Promise<void>((resolve) => {
        forward = resolve;
      });
      armed = { fault, seen, forward, held };
      return { seen: seenPromise, forward };
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
