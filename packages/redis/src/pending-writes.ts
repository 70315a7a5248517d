/**
 * A write that must reach Redis even when Redis is away at the moment it is made: the completion of
 * an event whose handlers succeeded, or the release of a claim (a handler failed, or a claim timed
 * out and may still land). Each is safe to repeat and to land late: the scripts act only on the
 * caller's own token.
 */
export interface Write {
  readonly operation: 'complete' | 'release';
  readonly eventId: string;
  /** The command, name first. */
  readonly command: readonly string[];
  /** When (ms since the epoch) the write stops mattering: what it acts on has expired by then. */
  readonly until: number;
}

interface Pending {
  readonly write: Write;
  /** A command for it is still in the client's hands (sent or queued, not yet answered). */
  inClient: boolean;
}

/** How the queue reaches Redis: `send` hands a command to the client; `wait` bounds and words the wait. */
export interface WriteChannel {
  send(command: readonly string[]): Promise<unknown>;
  wait(sent: Promise<unknown>, write: Write): Promise<unknown>;
}

/** How often writes that failed are tried again while Redis is away. */
const RETRY_INTERVAL_MS = 500;
/** Most writes kept for retrying: beyond it, new failures are not retried (the oldest are). */
const MAX_PENDING = 10_000;

/**
 * The store's one retry queue: completions and releases that Redis did not take are retried,
 * oldest first, every `RETRY_INTERVAL_MS`, until they land or stop mattering (`until`).
 *
 * Clients queue commands while disconnected and may flush that queue with an error later (ioredis
 * by default after about 10 s of reconnecting): a write is sent again only once its previous
 * command has failed, so a long outage piles up no copies, and a write is done as soon as any of
 * its commands lands, even one that answered after `wait` gave up on it.
 */
export class PendingWrites {
  readonly #channel: WriteChannel;
  /** In retry order: the oldest first; one that failed again goes to the back. */
  readonly #pending = new Set<Pending>();
  #timer: NodeJS.Timeout | undefined;

  constructor(channel: WriteChannel) {
    this.#channel = channel;
  }

  /**
   * Sends `write` now and resolves with Redis's reply; if it fails (or `wait` gives up), keeps it
   * for retrying and rejects with the error, saying so when it will be retried.
   */
  async send(write: Write): Promise<unknown> {
    const pending: Pending = { write, inClient: false };
    try {
      return await this.#attempt(pending);
    } catch (error) {
      throw this.#keep(pending) ? retrying(error, write) : error;
    }
  }

  /** How many writes of `operation` are waiting to be retried. */
  count(operation: Write['operation']): number {
    let count = 0;
    for (const { write } of this.#pending) if (write.operation === operation) count += 1;
    return count;
  }

  #attempt(pending: Pending): Promise<unknown> {
    let sent: Promise<unknown>;
    try {
      sent = this.#channel.send(pending.write.command);
    } catch (error) {
      sent = Promise.reject(error);
    }
    pending.inClient = true;
    sent.then(
      () => {
        pending.inClient = false;
        // Landed, perhaps after `wait` gave up on it: nothing left to retry.
        this.#pending.delete(pending);
      },
      () => {
        pending.inClient = false;
      },
    );
    return this.#channel.wait(sent, pending.write);
  }

  #keep(pending: Pending): boolean {
    if (this.#pending.size >= MAX_PENDING) return false;
    this.#pending.add(pending);
    this.#schedule();
    return true;
  }

  #schedule(): void {
    if (this.#timer || this.#pending.size === 0) return;
    // unref: pending retries must not keep a process alive that is otherwise done.
    this.#timer = setTimeout(() => void this.#retry(), RETRY_INTERVAL_MS).unref();
  }

  async #retry(): Promise<void> {
    for (const pending of this.#pending) {
      if (Date.now() > pending.write.until) {
        this.#pending.delete(pending);
        continue;
      }
      // Its last command may still land (queued in a reconnecting client): no second copy.
      if (pending.inClient) continue;
      try {
        await this.#attempt(pending);
        this.#pending.delete(pending);
      } catch {
        // Redis is still away: try again later, the others first, so that a write Redis refuses
        // (a key of another type) cannot hold back the rest.
        this.#pending.delete(pending);
        this.#pending.add(pending);
        break;
      }
    }
    this.#timer = undefined;
    this.#schedule();
  }
}

function retrying(error: unknown, write: Write): Error {
  const message = error instanceof Error ? error.message : String(error);
  return new Error(`${message} The store keeps retrying the ${write.operation} until Redis takes it.`, {
    cause: error instanceof Error && error.cause !== undefined ? error.cause : error,
  });
}
