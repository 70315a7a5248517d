/**
 * Redis Cluster support: telling a cluster connection, checking the prefix's hash tag, and the
 * replicas' confirmation of a delivery's job before its 202 (`waitForReplicas`).
 */

/** True for an ioredis `Cluster` instance (`new Cluster([...])`), which says so itself. */
export function isClusterConnection(connection: unknown): boolean {
  return (
    typeof connection === 'object' && connection !== null && (connection as { isCluster?: unknown }).isCluster === true
  );
}

/**
 * True when `prefix` holds a Redis hash tag: a `{`, then a `}` later with something between them.
 * Redis Cluster then places a key that starts with the prefix by that text alone, so every key of
 * the queue is in one slot and BullMQ's scripts (which touch several keys) run on one node.
 */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{');
  if (open < 0) return false;
  const close = prefix.indexOf('}', open + 1);
  return close > open + 1;
}

/** A pipeline of the ioredis client underneath the BullMQ queue (a `Redis` or a `Cluster`). */
interface PipelineLike {
  exists(key: string): PipelineLike;
  wait(replicas: number, timeoutMs: number): PipelineLike;
  exec(): Promise<[Error | null, unknown][] | null>;
}

export interface ReplicaClient {
  pipeline(): PipelineLike;
}

interface Waiter {
  key: string;
  resolve(): void;
  reject(error: Error): void;
}

/** Keys confirmed per round trip at most. */
const BATCH = 1_000;

/**
 * Confirms that jobs just written are held by `replicas` replicas of their master: one pipeline of
 * `EXISTS <job key>…` and `WAIT <replicas> <timeoutMs>` on the client that wrote them. WAIT blocks
 * the connection until the replicas have every write the connection made before it, so the
 * confirmations of jobs written meanwhile share the next round trip (one at a time per queue).
 * On a Redis Cluster the pipeline goes to the master of the jobs' slot (every key of the queue
 * shares the prefix's hash tag), the very connection that wrote them. The EXISTS catches a job
 * written to a master that died before the WAIT reached it: the pipeline then goes to the promoted
 * replica, which may not have the job.
 */
export class ReplicaAcks {
  readonly #client: () => Promise<ReplicaClient>;
  readonly #replicas: number;
  readonly #timeoutMs: number;
  #queued: Waiter[] = [];
  #sending = false;

  constructor(client: () => Promise<ReplicaClient>, replicas: number, timeoutMs: number) {
    this.#client = client;
    this.#replicas = replicas;
    this.#timeoutMs = timeoutMs;
  }

  /** Resolves once the job at `key` (written before this call) is on its master and `replicas` replicas. */
  confirm(key: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queued.push({ key, resolve, reject });
      if (!this.#sending) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#sending = true;
    try {
      while (this.#queued.length > 0) {
        const batch = this.#queued.splice(0, BATCH);
        try {
          const missing = await this.#send(batch.map((waiter) => waiter.key));
          for (const waiter of batch) {
            if (missing.has(waiter.key)) {
              waiter.reject(
                new Error(
                  'pixhook: BullMQQueue: a delivery was written to a Redis master that failed before a replica confirmed it, and the master now in charge does not have its job: answered 503 so the service delivers it again.',
                ),
              );
            } else waiter.resolve();
          }
        } catch (cause) {
          const error = cause instanceof Error ? cause : new Error(String(cause));
          for (const waiter of batch) waiter.reject(error);
        }
      }
    } finally {
      this.#sending = false;
    }
  }

  /** The keys of `keys` the master does not hold; rejects when fewer replicas than asked confirmed. */
  async #send(keys: string[]): Promise<Set<string>> {
    const client = await this.#client();
    let pipeline = client.pipeline();
    for (const key of keys) pipeline = pipeline.exists(key);
    const replies = (await pipeline.wait(this.#replicas, this.#timeoutMs).exec()) ?? [];
    const missing = new Set<string>();
    for (const [index, key] of keys.entries()) {
      const [error, exists] = replies[index] ?? [new Error('no reply')];
      if (error) throw error;
      if (Number(exists) !== 1) missing.add(key);
    }
    const [error, acked] = replies[keys.length] ?? [new Error('no reply to WAIT')];
    if (error) throw error;
    if (Number(acked) < this.#replicas) {
      throw new Error(
        `pixhook: BullMQQueue: ${Number(acked)} of ${this.#replicas} Redis replicas confirmed a delivery's job within ${this.#timeoutMs} ms (waitForReplicas): answered 503 so the service delivers it again. A replica is down or lagging; a master with no replica never confirms (set waitForReplicas: 0 to answer 202 without it).`,
      );
    }
    return missing;
  }
}
