/**
 * Deadlines for the request pipeline (the body deadline, the handler deadline) that cost a `Set`
 * insertion each instead of a Node timer. A Node `setTimeout`/`clearTimeout` pair costs about a
 * microsecond per request under load (a `Timeout` object, an async id, a list insertion, a ref
 * count kept in C++); nearly every deadline is cancelled long before it is due. Deadlines of one
 * duration fall due in the order they were set, so one timer per duration, armed for the oldest,
 * serves them all.
 *
 * The timer is unref'd: a deadline does not keep the process alive by itself (the request's socket
 * or the handler's own work does), as with `AbortSignal.timeout()`.
 */

/** A pending deadline; pass it to `cancelDeadline` once what it guards has finished. */
export interface Deadline {
  readonly at: number;
  readonly fire: () => void;
  readonly list: DeadlineList;
}

const now = () => performance.now();

export class DeadlineList {
  readonly #ms: number;
  readonly #pending = new Set<Deadline>();
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(fire: () => void): Deadline {
    const deadline: Deadline = { at: now() + this.#ms, fire, list: this };
    this.#pending.add(deadline);
    if (this.#timer === undefined) this.#arm(this.#ms);
    return deadline;
  }

  cancel(deadline: Deadline): void {
    // The timer stays armed: when it fires with nothing due it re-arms for the oldest, or stops.
    this.#pending.delete(deadline);
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#expire, ms);
    this.#timer.unref?.();
  }

  readonly #expire = (): void => {
    this.#timer = undefined;
    const time = now();
    for (const deadline of this.#pending) {
      if (deadline.at > time) {
        this.#arm(Math.max(1, Math.ceil(deadline.at - time)));
        return;
      }
      this.#pending.delete(deadline);
      try {
        deadline.fire();
      } catch (error) {
        // A callback that throws must not stop the others: rethrow it where a timer's would go.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  };
}

const lists = new Map<number, DeadlineList>();

/**
 * Calls `fire` once `ms` milliseconds have passed, unless `cancelDeadline` comes first.
 * @example
 * const deadline = setDeadline(5_000, () => stream.destroy()); … cancelDeadline(deadline)
 */
export function setDeadline(ms: number, fire: () => void): Deadline {
  let list = lists.get(ms);
  if (list === undefined) {
    list = new DeadlineList(ms);
    lists.set(ms, list);
  }
  return list.add(fire);
}

/** Cancels a deadline that has not fired yet; does nothing for one that has. */
export function cancelDeadline(deadline: Deadline): void {
  deadline.list.cancel(deadline);
}
