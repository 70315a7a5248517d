/**
 * Groups concurrent calls into batches: what arrives while the batches in flight are at their
 * bound waits, and goes out as the next batch (at most `maxSize` items) as soon as one returns.
 * With room in flight, what arrived in the same turn of the event loop goes out together at the
 * end of it (`setImmediate`: every request read in that turn is in). Each item's promise settles
 * with its own outcome; a batch that fails rejects every item in it.
 */
export class Batcher<T, R = undefined> {
  readonly #run: (items: T[]) => Promise<(R | Error)[]>;
  readonly #maxSize: number;
  readonly #maxInFlight: number;
  #waiting: { item: T; resolve: (result: R) => void; reject: (error: unknown) => void }[] = [];
  #inFlight = 0;
  #scheduled = false;

  /**
   * @param run - sends one batch; resolves one entry per item: its result, or the error to reject
   *   it with (an `Error`); rejects when the whole batch failed
   */
  constructor(run: (items: T[]) => Promise<(R | Error)[]>, maxSize: number, maxInFlight: number) {
    this.#run = run;
    this.#maxSize = maxSize;
    this.#maxInFlight = maxInFlight;
  }

  /** Resolves once the batch holding `item` succeeded for it (with its result); rejects with why not. */
  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#maxInFlight || this.#waiting.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    while (this.#waiting.length > 0 && this.#inFlight < this.#maxInFlight) {
      const batch = this.#waiting.splice(0, this.#maxSize);
      this.#inFlight++;
      let sent: Promise<(R | Error)[]>;
      try {
        sent = this.#run(batch.map((entry) => entry.item));
      } catch (error) {
        sent = Promise.reject(error);
      }
      sent
        .then(
          (outcomes) => {
            batch.forEach((entry, index) => {
              const outcome = outcomes[index] as R | Error;
              if (outcome instanceof Error) entry.reject(outcome);
              else entry.resolve(outcome);
            });
          },
          (error: unknown) => {
            for (const entry of batch) entry.reject(error);
          },
        )
        .finally(() => {
          this.#inFlight--;
          this.#schedule();
        });
    }
  }
}
