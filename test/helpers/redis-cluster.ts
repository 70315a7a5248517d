/**
 * Starts and stops a real Redis Cluster on 127.0.0.1 for tests: `masters` redis-server processes
 * with `--cluster-enabled yes`, each with `replicas` replicas, joined by `redis-cli --cluster create`;
 * resolves once every node says `cluster_state:ok` and agrees on the masters. Every process is
 * stopped by `close()`.
 *
 * When redis-server or redis-cli is missing: under CI (CI=true) importing this module throws, so the
 * run fails loudly; elsewhere the cluster suites are skipped with the reason printed once.
 * Set REDIS_SERVER / REDIS_CLI to use binaries that are not on the PATH.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { redisUnavailable } from './redis-server.js';
import { describeIfAvailable } from './unavailable.js';

const SERVER = process.env.REDIS_SERVER || 'redis-server';
const CLI = process.env.REDIS_CLI || 'redis-cli';

function probeCli(): string | undefined {
  const result = spawnSync(CLI, ['--version'], { encoding: 'utf8' });
  if (result.error)
    return `${CLI} could not be run (${(result.error as NodeJS.ErrnoException).code ?? result.error.message})`;
  if (result.status !== 0) return `${CLI} --version exited with ${result.status}`;
  return undefined;
}

/** The major version of redis-server (`--cluster-port` came with 7), 0 when unknown. */
function serverMajor(): number {
  const result = spawnSync(SERVER, ['--version'], { encoding: 'utf8' });
  return Number(/v=(\d+)\./.exec(result.stdout ?? '')?.[1] ?? 0);
}

/** True when nothing listens on 127.0.0.1:`port` now. */
function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Why a Redis Cluster cannot be started here, or undefined when it can. */
export const redisClusterUnavailable = redisUnavailable ?? probeCli();

/** `describe`, or `describe.skip` when no Redis Cluster can be started here (never under CI: that throws). */
export const describeWithRedisCluster = describeIfAvailable(
  'the Redis Cluster test suites (@pixhook/redis, @pixhook/bullmq)',
  redisClusterUnavailable,
  'install redis-server and redis-cli (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis) or set REDIS_SERVER and REDIS_CLI',
);

/** A RESP reply: a string (simple or bulk), a number, null, an array, or an Error (`-ERR …`). */
export type Reply = string | number | null | Error | Reply[];

/** Parses one RESP reply from `data` at `at`; undefined when incomplete. */
function parse(data: Buffer, at: number): { value: Reply; end: number } | undefined {
  const line = data.indexOf('\r\n', at);
  if (line < 0) return undefined;
  const type = String.fromCharCode(data[at]!);
  const text = data.toString('utf8', at + 1, line);
  if (type === '+') return { value: text, end: line + 2 };
  if (type === '-') return { value: new Error(text), end: line + 2 };
  if (type === ':') return { value: Number(text), end: line + 2 };
  if (type === '$') {
    const length = Number(text);
    if (length < 0) return { value: null, end: line + 2 };
    if (data.length < line + 2 + length + 2) return undefined;
    return { value: data.toString('utf8', line + 2, line + 2 + length), end: line + 2 + length + 2 };
  }
  if (type === '*') {
    const count = Number(text);
    if (count < 0) return { value: null, end: line + 2 };
    const items: Reply[] = [];
    let end = line + 2;
    for (let i = 0; i < count; i += 1) {
      const item = parse(data, end);
      if (!item) return undefined;
      items.push(item.value);
      end = item.end;
    }
    return { value: items, end };
  }
  throw new Error(`redis-cluster: unexpected RESP type ${JSON.stringify(type)}`);
}

/** Sends one command to the node at `port` on its own connection; rejects when it cannot connect or past `ms`. */
export function command(port: number, args: readonly (string | number)[], ms = 5_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let data = Buffer.alloc(0);
    const fail = (error: Error) => {
      socket.destroy();
      reject(error);
    };
    socket.setTimeout(ms, () =>
      fail(new Error(`redis-cluster: ${args[0]} on port ${port}: no answer within ${ms} ms`)),
    );
    socket.on('error', fail);
    socket.on('connect', () => {
      const parts = args.map(String);
      socket.write(`*${parts.length}\r\n${parts.map((part) => `$${Buffer.byteLength(part)}\r\n${part}\r\n`).join('')}`);
    });
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const reply = parse(data, 0);
      if (!reply) return;
      socket.destroy();
      resolve(reply.value);
    });
  });
}

/** One line of CLUSTER NODES. */
export interface NodeInfo {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** The master's id, for a replica. */
  masterId: string | undefined;
  /** Flagged `fail` or `fail?` by the node asked. */
  failing: boolean;
  /** Slot ranges served, for a master: [first, last] inclusive. */
  slots: [number, number][];
}

/** Parses CLUSTER NODES as one node sees it. */
export function parseNodes(text: string): NodeInfo[] {
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, address, flags, master, , , , , ...slots] = line.trim().split(' ');
      const flagSet = new Set(flags!.split(','));
      return {
        id: id!,
        port: Number(address!.split('@')[0]!.split(':')[1]),
        role: flagSet.has('master') ? ('master' as const) : ('replica' as const),
        masterId: master === '-' ? undefined : master,
        failing: flagSet.has('fail') || flagSet.has('fail?'),
        slots: slots
          .filter((slot) => !slot.startsWith('['))
          .map((slot) => {
            const [first, last] = slot.split('-').map(Number);
            return [first!, last ?? first!] as [number, number];
          }),
      };
    });
}

/** One redis-server of the cluster. */
export interface ClusterNode {
  readonly port: number;
  /** True while its process runs. */
  readonly running: boolean;
  /** Stops it (SIGKILL by default: a crash) and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port with the same nodes.conf: it rejoins the cluster. */
  start(): Promise<void>;
  /** Freezes it (SIGSTOP): connections stay open, nothing is answered, as on a stalled host. */
  pause(): void;
  /** Lets a paused node go on (SIGCONT). */
  resume(): void;
}

/** A Redis Cluster the test controls. */
export interface RedisCluster {
  readonly nodes: readonly ClusterNode[];
  /** `[{ host, port }]` of every node, for `new Cluster(startupNodes)`. */
  readonly startupNodes: { host: string; port: number }[];
  /** `cluster-node-timeout`, in ms. */
  readonly nodeTimeoutMs: number;
  /** Sends one command to the node at `port` (the reply, or an Error for `-ERR`). */
  command(port: number, ...args: (string | number)[]): Promise<Reply>;
  /** CLUSTER NODES as the running node at `port` (or the first running one) sees it. */
  topology(port?: number): Promise<NodeInfo[]>;
  /** The hash slot of `key` (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** The port of the master serving `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /** The ports of the replicas of the master at `port`. */
  replicasOf(port: number): Promise<number[]>;
  /**
   * Resolves once every running node says `cluster_state:ok`, every slot is served by a running
   * master, and every running node agrees on who the masters are (the view `CLUSTER NODES` gives).
   * Rejects after `ms`.
   */
  waitForOk(ms?: number): Promise<void>;
  /** Resolves once every running replica is linked to its master and synced (ROLE on every node). */
  waitForSync(ms?: number): Promise<void>;
  /**
   * Kills the master at `port` (SIGKILL) and resolves once one of its replicas is master of its
   * slots on every running node and the cluster is ok again: the new master's port and how long it took.
   */
  failover(port: number, ms?: number): Promise<{ port: number; ms: number }>;
  /** Stops every node and removes the data directory. */
  close(): Promise<void>;
}

export interface RedisClusterOptions {
  /** Masters, each with a share of the 16,384 slots. @default 3 */
  masters?: number;
  /** Replicas per master. @default 1 */
  replicas?: number;
  /**
   * `cluster-node-timeout`, in ms: how long a node may not answer before the others count it as
   * failing; a failover takes about twice this (3.4–4.5 s measured with 2_000). The default is
   * large enough that a busy 2-core machine never fails a node over by itself; failover tests pass
   * 2_000, small enough for a failover within seconds.
   * @default 5_000
   */
  nodeTimeoutMs?: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForPing(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}: ${output()}`);
    const reply = await command(port, ['PING'], 1_000).catch(() => undefined);
    if (reply === 'PONG') return;
    await pause(25);
  }
  throw new Error(`redis-server on port ${port} did not answer PING within 15 s: ${output()}`);
}

/** Starts a Redis Cluster of `masters` × (1 + `replicas`) nodes and resolves once it is ok. */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const { masters = 3, replicas = 1, nodeTimeoutMs = 5_000 } = options;
  const dir = mkdtempSync(join(tmpdir(), 'pixhook-redis-cluster-'));
  const ports: number[] = [];
  // Each node's cluster bus port, chosen free too (by default it is port + 10,000: maybe taken,
  // maybe in the ephemeral range).
  const busPorts = new Map<number, number>();
  const ownBusPort = serverMajor() >= 7;
  while (ports.length < masters * (1 + replicas)) {
    const port = await freePort();
    if (ownBusPort) busPorts.set(port, await freePort());
    // Before Redis 7 the bus port is always port + 10,000: it must be free too.
    else if (port + 10_000 > 65_535 || !(await isFree(port + 10_000))) continue;
    ports.push(port);
  }
  const children = new Map<number, ChildProcess>();

  const startNode = async (port: number) => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      '--cluster-enabled',
      'yes',
      ...(ownBusPort ? ['--cluster-port', String(busPorts.get(port))] : []),
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      // A replica whose link dropped for a while may still be promoted: the test kills masters.
      '--cluster-replica-validity-factor',
      '0',
    ];
    let output = '';
    const child = spawn(SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    children.set(port, child);
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    await waitForPing(port, child, () => output);
  };

  const stopNode = async (port: number, signal: NodeJS.Signals = 'SIGKILL') => {
    const child = children.get(port);
    children.delete(port);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill(signal);
      child.kill('SIGCONT');
    });
  };

  const running = () => ports.filter((port) => children.has(port));

  const topology = async (port?: number): Promise<NodeInfo[]> => {
    const asked = port ?? running()[0];
    if (asked === undefined) throw new Error('redis-cluster: no node is running');
    const reply = await command(asked, ['CLUSTER', 'NODES']);
    if (typeof reply !== 'string')
      throw new Error(`redis-cluster: CLUSTER NODES on ${asked} answered ${String(reply)}`);
    return parseNodes(reply);
  };

  /** Undefined when ok, else why not (for the timeout's message). */
  const notOk = async (): Promise<string | undefined> => {
    const views: string[] = [];
    for (const port of running()) {
      const info = await command(port, ['CLUSTER', 'INFO'], 2_000).catch((error: Error) => error);
      if (typeof info !== 'string') return `node ${port}: CLUSTER INFO failed: ${String(info)}`;
      if (!info.includes('cluster_state:ok')) return `node ${port}: ${info.split('\r\n')[0]}`;
      const nodes = await topology(port).catch(() => undefined);
      if (!nodes) return `node ${port}: CLUSTER NODES failed`;
      const serving = nodes.filter((node) => node.role === 'master' && node.slots.length > 0);
      const dead = serving.filter((node) => !children.has(node.port) || node.failing);
      if (dead.length > 0) return `node ${port} sees slots on a stopped or failing master ${dead[0]!.port}`;
      const covered = serving.reduce(
        (sum, node) => sum + node.slots.reduce((n, [first, last]) => n + last - first + 1, 0),
        0,
      );
      if (covered !== 16_384) return `node ${port} sees ${covered} of 16384 slots served`;
      // Gossip has told it every running replica's role and master.
      const replicasSeen = nodes.filter(
        (node) => node.role === 'replica' && node.masterId !== undefined && children.has(node.port) && !node.failing,
      );
      if (replicasSeen.length !== running().length - masters) {
        return `node ${port} sees ${replicasSeen.length} of ${running().length - masters} running replicas`;
      }
      views.push(
        serving
          .map((node) => node.port)
          .sort()
          .join(','),
      );
    }
    if (new Set(views).size > 1) return `nodes disagree on the masters: ${[...new Set(views)].join(' / ')}`;
    return undefined;
  };

  const waitForOk = async (ms = 60_000) => {
    const deadline = Date.now() + ms;
    let why: string | undefined = 'not asked yet';
    while (Date.now() < deadline) {
      why = await notOk();
      if (why === undefined) return;
      await pause(50);
    }
    throw new Error(`redis-cluster: not ok within ${ms} ms: ${why}`);
  };

  /** Every running replica is linked to its master and synced, and every master has them all. */
  const waitForSync = async (ms = 60_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const roles = await Promise.all(running().map((port) => command(port, ['ROLE']).catch(() => null)));
      const linked = roles.filter((role) => Array.isArray(role) && role[0] === 'slave' && role[3] === 'connected');
      let listed = 0;
      for (const role of roles) {
        if (Array.isArray(role) && role[0] === 'master' && Array.isArray(role[2])) listed += role[2].length;
      }
      const expected = running().length - masters;
      if (linked.length === expected && listed === expected) return;
      if (Date.now() > deadline) throw new Error(`redis-cluster: the replicas did not sync within ${ms} ms`);
      await pause(50);
    }
  };

  const close = async () => {
    await Promise.all([...children.keys()].map((port) => stopNode(port, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await Promise.all(ports.map(startNode));
    const create = spawnSync(
      CLI,
      [
        '--cluster',
        'create',
        ...ports.map((port) => `127.0.0.1:${port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (create.status !== 0) {
      throw new Error(
        `redis-cli --cluster create exited with ${create.status}: ${(create.stdout + create.stderr).slice(-2_000)}`,
      );
    }
    await waitForOk(60_000);
    await waitForSync(60_000);
  } catch (error) {
    await close();
    throw error;
  }

  const nodes: ClusterNode[] = ports.map((port) => ({
    port,
    get running() {
      return children.has(port);
    },
    stop: (signal?: NodeJS.Signals) => stopNode(port, signal),
    start: () => startNode(port),
    pause: () => void children.get(port)?.kill('SIGSTOP'),
    resume: () => void children.get(port)?.kill('SIGCONT'),
  }));

  const slotOf = async (key: string) => {
    const reply = await command(running()[0]!, ['CLUSTER', 'KEYSLOT', key]);
    if (typeof reply !== 'number') throw new Error(`redis-cluster: CLUSTER KEYSLOT answered ${String(reply)}`);
    return reply;
  };

  return {
    nodes,
    startupNodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    nodeTimeoutMs,
    command: (port, ...args) => command(port, args),
    topology,
    slotOf,
    masterOf: async (key) => {
      const slot = await slotOf(key);
      const owner = (await topology()).find(
        (node) => node.role === 'master' && node.slots.some(([first, last]) => slot >= first && slot <= last),
      );
      if (!owner) throw new Error(`redis-cluster: no master serves slot ${slot}`);
      return owner.port;
    },
    replicasOf: async (port) => {
      const nodes = await topology();
      const master = nodes.find((node) => node.port === port);
      return nodes.filter((node) => master !== undefined && node.masterId === master.id).map((node) => node.port);
    },
    waitForOk,
    waitForSync,
    failover: async (port, ms = 60_000) => {
      const before = await topology(port);
      const killed = before.find((node) => node.port === port);
      if (killed?.role !== 'master') throw new Error(`redis-cluster: ${port} is not a master`);
      const started = Date.now();
      await stopNode(port, 'SIGKILL');
      const deadline = started + ms;
      for (;;) {
        if ((await notOk().catch((error: Error) => error.message)) === undefined) {
          const promoted = (await topology()).find(
            (node) =>
              node.role === 'master' &&
              node.slots.some(([first]) => killed.slots.some(([from, to]) => first >= from && first <= to)),
          );
          if (promoted && promoted.port !== port) return { port: promoted.port, ms: Date.now() - started };
        }
        if (Date.now() > deadline) throw new Error(`redis-cluster: no replica of ${port} took over within ${ms} ms`);
        await pause(50);
      }
    },
    close,
  };
}
