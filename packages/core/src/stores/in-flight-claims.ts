import { removeSlot, tableSize } from './completed-events.js';

/** Claims held before the table first grows. */
const FIRST_CAPACITY = 16;

/**
 * The claims a `MemoryStore` holds while their handlers run: ids with their token and expiry time,
 * found by id. Under load every delivery adds one and removes it a moment later; in a `Map` that
 * is an entry object and a table reallocated as the claims in flight grow and shrink (garbage on
 * every delivery). Here, as in `CompletedEvents`, an open-addressing table of 32-bit hashes in an
 * `Int32Array` finds an entry, and the entries live in parallel arrays whose positions are
 * recycled through a free list: claiming and ending a claim allocate nothing once the table has
 * room for the claims in flight at once (it doubles when full; `MemoryStore` bounds their number).
 */
export class InFlightClaims {
  #ids: (string | undefined)[];
  #tokens: (string | number | undefined)[];
  #expires: Float64Array;
  #hashes: Int32Array;
  /** Free entry positions, a stack: `#free[0 … #freeCount - 1]`. */
  #free: Int32Array;
  #freeCount: number;
  /** Pairs [hash, entry + 1]; a hash of 0 marks an empty slot. Load factor ≤ 1/2. */
  #slots: Int32Array;
  #mask: number;
  #size = 0;

  constructor() {
    this.#ids = new Array(FIRST_CAPACITY);
    this.#tokens = new Array(FIRST_CAPACITY);
    this.#expires = new Float64Array(FIRST_CAPACITY);
    this.#hashes = new Int32Array(FIRST_CAPACITY);
    this.#free = new Int32Array(FIRST_CAPACITY);
    for (let i = 0; i < FIRST_CAPACITY; i++) this.#free[i] = FIRST_CAPACITY - 1 - i;
    this.#freeCount = FIRST_CAPACITY;
    const size = tableSize(FIRST_CAPACITY);
    this.#slots = new Int32Array(size * 2);
    this.#mask = size - 1;
  }

  /** Claims held (expired ones included until they are found or dropped). */
  get size(): number {
    return this.#size;
  }

  /** The entry holding `id` (whose `hashOf` is `hash`), or -1. */
  find(id: string, hash: number): number {
    const slots = this.#slots;
    const mask = this.#mask;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const h = slots[2 * i] as number;
      if (h === 0) return -1;
      if (h === hash) {
        const entry = (slots[2 * i + 1] as number) - 1;
        if (this.#ids[entry] === id) return entry;
      }
    }
  }

  /** When entry `entry`'s claim expires. */
  expiresAt(entry: number): number {
    return this.#expires[entry] as number;
  }

  /** Entry `entry`'s claim token. */
  token(entry: number): string | number | undefined {
    return this.#tokens[entry];
  }

  /** Moves entry `entry`'s expiry time to `expiresAt` (a renewal). */
  renew(entry: number, expiresAt: number): void {
    this.#expires[entry] = expiresAt;
  }

  /** Adds a claim on `id`, which holds none (`find` answered -1). */
  add(id: string, hash: number, token: string | number | undefined, expiresAt: number): void {
    if (this.#freeCount === 0) this.#grow();
    const entry = this.#free[--this.#freeCount] as number;
    this.#ids[entry] = id;
    this.#tokens[entry] = token;
    this.#expires[entry] = expiresAt;
    this.#hashes[entry] = hash;
    this.#index(hash, entry);
    this.#size++;
  }

  /** Removes the claim in entry `entry` (from `find`). */
  remove(entry: number): void {
    const hash = this.#hashes[entry] as number;
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    while (slots[2 * i + 1] !== entry + 1) i = (i + 1) & mask;
    removeSlot(slots, mask, i);
    this.#ids[entry] = undefined;
    this.#tokens[entry] = undefined;
    this.#free[this.#freeCount++] = entry;
    this.#size--;
  }

  /** Removes every claim whose time has passed by `now`. */
  dropExpired(now: number): void {
    const ids = this.#ids;
    for (let entry = 0; entry < ids.length; entry++) {
      if (ids[entry] !== undefined && (this.#expires[entry] as number) <= now) this.remove(entry);
    }
  }

  #index(hash: number, entry: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    while (slots[2 * i] !== 0) i = (i + 1) & mask;
    slots[2 * i] = hash;
    slots[2 * i + 1] = entry + 1;
  }

  /** Every entry is held: doubles the entries and the table, and indexes them again. */
  #grow(): void {
    const old = this.#ids.length;
    const capacity = old * 2;
    this.#ids.length = capacity;
    this.#tokens.length = capacity;
    const expires = new Float64Array(capacity);
    expires.set(this.#expires);
    this.#expires = expires;
    const hashes = new Int32Array(capacity);
    hashes.set(this.#hashes);
    this.#hashes = hashes;
    this.#free = new Int32Array(capacity);
    for (let i = 0; i < old; i++) this.#free[i] = capacity - 1 - i;
    this.#freeCount = old;
    const size = tableSize(capacity);
    this.#slots = new Int32Array(size * 2);
    this.#mask = size - 1;
    for (let entry = 0; entry < old; entry++) this.#index(hashes[entry] as number, entry);
  }
}
