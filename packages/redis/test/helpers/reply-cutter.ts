/**
 * A TCP proxy on 127.0.0.1 between one Redis client and a real redis-server that can lose a reply:
 * armed, it drops the next reply Redis sends (so Redis has run the command, but the client never
 * hears back), cuts the connection, and stops listening until `restore()`, so the client's
 * reconnections are refused as they are by a stopped Redis. Everything else passes through.
 */
import net from 'node:net';

export interface ReplyCutter {
  /** Where the client connects instead of Redis. */
  readonly port: number;
  /** Resolves once the next reply from Redis has been dropped and the connection cut. */
  cutNextReply(): Promise<void>;
  /** Listens again on the same port: the client reconnects (to Redis, when it is up). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startReplyCutter(redisPort: number): Promise<ReplyCutter> {
  const sockets = new Set<net.Socket>();
  let onCut: (() => void) | undefined;

  const server = net.createServer((client) => {
    sockets.add(client);
    const redis = net.connect({ host: '127.0.0.1', port: redisPort });
    sockets.add(redis);
    const cut = () => {
      client.destroy();
      redis.destroy();
      sockets.delete(client);
      sockets.delete(redis);
    };
    for (const socket of [client, redis]) {
      socket.on('error', cut);
      socket.on('close', cut);
    }
    // net queues writes made before `redis` is connected.
    client.on('data', (chunk) => redis.write(chunk));
    redis.on('data', (chunk) => {
      if (onCut) {
        const done = onCut;
        onCut = undefined;
        cut();
        server.close();
        done();
        return;
      }
      client.write(chunk);
    });
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(0);
  const { port } = server.address() as net.AddressInfo;

  return {
    port,
    cutNextReply: () =>
      new Promise<void>((resolve) => {
        onCut = resolve;
      }),
    restore: () => listen(port),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
      });
    },
  };
}
