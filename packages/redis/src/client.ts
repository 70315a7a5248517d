import { describeType } from '@pixhook/core';

/**
 * The part of an `ioredis` client that `RedisStore` uses: a `new Redis()`, or a `new Cluster([...])`
 * for Redis Cluster (it routes each command, scripts included, to the master of its first key).
 */
export interface IoRedisClientLike {
  readonly status: string;
  call(command: string, ...args: string[]): Promise<unknown>;
}

/** The part of a node-redis (`redis` v4, v5, v6) client from `createClient()` that `RedisStore` uses. */
export interface NodeRedisClientLike {
  readonly isOpen: boolean;
  sendCommand(args: string[]): Promise<unknown>;
}

/** A client from either library, created, connected and owned by the app. */
export type RedisClientLike = IoRedisClientLike | NodeRedisClientLike;

/** Which library a client comes from. */
export type ClientKind = 'ioredis' | 'node-redis';

/** Sends one command (name first) and resolves with the raw reply. */
export type SendCommand = (args: string[]) => Promise<unknown>;

/** What was passed instead of a client, in words: `a plain object`, `an instance of Map`, `the number 6379`. */
function describe(value: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return describeType(value);
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  if (name === 'Object' || typeof name !== 'string' || name === '') return 'a plain object';
  return `an instance of ${name.slice(0, 40)}`;
}

/**
 * Tells an ioredis client from a node-redis one and returns a uniform command sender.
 * ioredis also has a `sendCommand`, but one that takes its own `Command` objects, so `call` decides.
 */
export function commandSender(
  client: unknown,
  owner: 'RedisStore' | 'RedisArchive' = 'RedisStore',
): { kind: ClientKind; send: SendCommand } {
  const candidate =
    typeof client === 'object' && client !== null ? (client as Partial<IoRedisClientLike & NodeRedisClientLike>) : null;
  if (candidate && typeof candidate.call === 'function' && typeof candidate.status === 'string') {
    const io = candidate as IoRedisClientLike;
    return { kind: 'ioredis', send: ([command, ...args]) => io.call(command as string, ...args) };
  }
  if (
    candidate &&
    'masters' in candidate &&
    typeof (candidate as { getSlotMaster?: unknown }).getSlotMaster === 'function'
  ) {
    // Its sendCommand takes (firstKey, isReadonly, args): ours would be misrouted. An ioredis
    // Cluster routes by the command's keys itself, and is taken above.
    throw new TypeError(
      `pixhook: ${owner}: node-redis cluster clients (createCluster) are not supported; pass a client from createClient(), or an ioredis client (new Cluster([...]) for Redis Cluster).`,
    );
  }
  if (candidate && typeof candidate.sendCommand === 'function' && typeof candidate.isOpen === 'boolean') {
    const node = candidate as NodeRedisClientLike;
    return { kind: 'node-redis', send: (args) => node.sendCommand(args) };
  }
  throw new TypeError(
    `pixhook: ${owner}: the first argument must be an ioredis client (new Redis()) or a node-redis client (createClient() from 'redis'); got ${describe(client)}.`,
  );
}
