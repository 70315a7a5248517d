import { PostgresTimeoutError } from './database.js';

/**
 * Group commit: concurrent calls of one step (claims, or completions) of one store sent to Postgres
 * as one statement, so they share its round trip and its commit (one WAL flush instead of one each).
 *
 * Adaptive, no timer: while fewer than `maxInFlight` of its statements are in flight, what is queued
 * goes on the next turn of the event loop (`setImmediate`: the calls of the requests read in the same
 * turn go together, and an idle store adds no wait); else calls queue until one returns, and go
 * together then, at most `maxSize` per statement. Each call keeps its own bound: it rejects with a
 * `PostgresTimeoutError` `timeoutMs` after it was made, whether it was still queued (then it is never
 * sent) or sent (then `late` gets its answer if one comes). A statement that fails rejects each of its
 * calls with the error. A statement unanswered after `timeoutMs` stops counting as in flight, so a
 * connection that hangs never stalls the calls behind it (they go on other connections of the pool).
 *
 * Two calls with the same key never go in one statement (Postgres refuses to change one row twice in
 * a statement), nor in two statements in flight at once (the later one's snapshot could predate the
 * earlier one's commit): with `duplicate`, the second is answered from the first's answer, as a
 * second statement run right after it would be; without, it waits until the first's statement has
 * returned, and goes in a later one.
 */
export interface BatchOptions<I, O> {
  /** Runs the statement for `inputs` (distinct keys, in the order locks must be taken) and answers each, in order. */
  readonly run: (inputs: readonly I[]) => Promise<readonly O[]>;
  /** What two calls must not share a statement for (the event id). */
  readonly key: (input: I) => string;
  /** A later call's answer, from that of the call with its key earlier in the same statement. */
  readonly duplicate?: (first: O) => O;
  /** Rewrites a statement's error for its callers (a missing table: which migration to run). */
  readonly explain: (error: unknown) => unknown;
  readonly maxSize: number;
  readonly maxInFlight: number;
  readonly timeoutMs: number;
  /** The step, for the timeout's message: `claim`. */
  readonly what: string;
}

interface Call<I, O> {
  readonly input: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
  readonly late: ((value: O) => void) | undefined;
  readonly timer: ReturnType<typeof setTimeout>;
  /** Answered, rejected or timed out: nothing more happens to its promise. */
  done: boolean;
  /** Timed out: an answer that comes later goes to `late`. */
  timedOut: boolean;
}

export class Batcher<I, O> {
  readonly #options: BatchOptions<I, O>;
  #queue: Call<I, O>[] = [];
  #inFlight = 0;
  #scheduled = false;
  /** The keys of the statements in flight: a call with one of them waits until that one returns. */
  readonly #busy = new Set<string>();

  constructor(options: BatchOptions<I, O>) {
    this.#options = options;
  }

  /** Queues `input`; resolves with its answer, or rejects (a failed statement, or `timeoutMs` passed). */
  submit(input: I, late?: (value: O) => void): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const { timeoutMs, what } = this.#options;
      const call: Call<I, O> = {
        input,
        resolve,
        reject,
        late,
        done: false,
        timedOut: false,
        timer: setTimeout(() => {
          if (call.done) return;
          call.done = true;
          call.timedOut = true;
          reject(
            new PostgresTimeoutError(`pixhook: Postgres did not answer within timeoutMs (${timeoutMs} ms): ${what}.`),
          );
        }, timeoutMs),
      };
      this.#queue.push(call);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.length === 0 || this.#inFlight >= this.#options.maxInFlight) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    while (this.#inFlight < this.#options.maxInFlight) {
      const batch = this.#take();
      if (batch === undefined) return;
      this.#send(batch);
    }
  }

  /** The next statement's calls: the first of each key (and, with `duplicate`, the later ones of it). */
  #take(): { firsts: Call<I, O>[]; later: Map<Call<I, O>, Call<I, O>[]> } | undefined {
    const { key, duplicate, maxSize } = this.#options;
    const byKey = new Map<string, Call<I, O>>();
    const later = new Map<Call<I, O>, Call<I, O>[]>();
    const rest: Call<I, O>[] = [];
    for (const call of this.#queue) {
      if (call.done) continue; // timed out while queued: never sent.
      const k = key(call.input);
      const first = byKey.get(k);
      if (first === undefined && this.#busy.has(k)) {
        rest.push(call);
      } else if (first === undefined && byKey.size < maxSize) {
        byKey.set(k, call);
      } else if (first !== undefined && duplicate !== undefined) {
        const followers = later.get(first);
        if (followers === undefined) later.set(first, [call]);
        else followers.push(call);
      } else {
        rest.push(call);
      }
    }
    this.#queue = rest;
    if (byKey.size === 0) return undefined;
    // One order for every statement of every instance (locks taken in it): two never deadlock.
    const firsts = [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, call]) => call);
    return { firsts, later };
  }

  #send({ firsts, later }: { firsts: Call<I, O>[]; later: Map<Call<I, O>, Call<I, O>[]> }): void {
    const { run, key, duplicate, explain, timeoutMs } = this.#options;
    this.#inFlight += 1;
    const keys = firsts.map((call) => key(call.input));
    for (const k of keys) this.#busy.add(k);
    let counted = true;
    const free = () => {
      if (!counted) return;
      counted = false;
      clearTimeout(slot);
      this.#inFlight -= 1;
      for (const k of keys) this.#busy.delete(k);
      this.#schedule();
    };
    const slot = setTimeout(free, timeoutMs);
    let sent: Promise<readonly O[]>;
    try {
      sent = run(firsts.map((call) => call.input));
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      (answers) => {
        free();
        firsts.forEach((call, index) => {
          const answer = answers[index] as O;
          this.#answer(call, answer);
          const followers = later.get(call);
          if (followers !== undefined && duplicate !== undefined) {
            const next = duplicate(answer);
            for (const follower of followers) this.#answer(follower, next);
          }
        });
      },
      (error: unknown) => {
        free();
        const explained = explain(error);
        for (const call of firsts) {
          for (const each of [call, ...(later.get(call) ?? [])]) {
            clearTimeout(each.timer);
            if (each.done) continue;
            each.done = true;
            each.reject(explained);
          }
        }
      },
    );
  }

  #answer(call: Call<I, O>, answer: O): void {
    clearTimeout(call.timer);
    if (call.timedOut) {
      call.late?.(answer);
      return;
    }
    if (call.done) return;
    call.done = true;
    call.resolve(answer);
  }
}
