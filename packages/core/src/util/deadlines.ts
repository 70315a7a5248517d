/**
 * Deadlines for the request pipeline (the body deadline, the handler deadline) that cost a link in
 * a list each instead of a Node timer. A Node `setTimeout`/`clearTimeout` pair costs about a
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

/** A deadline as its list keeps it: a link of a doubly linked list, oldest first. */
interface Link extends Deadline {
  prev: Link | undefined;
  next: Link | undefined;
  /** False once it has fired or was cancelled: cancelling it again does nothing. */
  pending: boolean;
}

const now = () => performance.now();

// The pending deadlines of one duration are a doubly linked list through the deadlines themselves,
// not a `Set`: adding and cancelling unlink an object in place (a `Set` of objects costs an identity
// hash per deadline and a rehash of its table as entries come and go, ~0.5 µs per request measured).
export class DeadlineList {
  readonly #ms: number;
  #head: Link | undefined;
  #tail: Link | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  add(fire: () => void): Deadline {
    const link: Link = { at: now() + this.#ms, fire, list: this, prev: this.#tail, next: undefined, pending: true };
    if (this.#tail === undefined) this.#head = link;
    else this.#tail.next = link;
    this.#tail = link;
    if (this.#timer === undefined) this.#arm(this.#ms);
    return link;
  }

  cancel(deadline: Deadline): void {
    // The timer stays armed: when it fires with nothing due it re-arms for the oldest, or stops.
    this.#unlink(deadline as Link);
  }

  #unlink(link: Link): void {
    if (!link.pending) return;
    link.pending = false;
    const { prev, next } = link;
    if (prev === undefined) this.#head = next;
    else prev.next = next;
    if (next === undefined) this.#tail = prev;
    else next.prev = prev;
    link.prev = undefined;
    link.next = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(this.#expire, ms);
    this.#timer.unref?.();
  }

  readonly #expire = (): void => {
    this.#timer = undefined;
    const time = now();
    for (let deadline = this.#head; deadline !== undefined; deadline = this.#head) {
      if (deadline.at > time) {
        this.#arm(Math.max(1, Math.ceil(deadline.at - time)));
        return;
      }
      this.#unlink(deadline);
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
