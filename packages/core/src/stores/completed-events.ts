/**
 * The completed events a `MemoryStore` remembers: ids in the order they completed, each with the
 * time it expires, and an index to find one by id.
 *
 * Why not a `Map`: under load every delivery looks up an id that is not there, in a table of up to
 * `maxEntries` (100,000 by default) ids. A `Map` with string keys follows a bucket, then each entry
 * of its chain, then each candidate key string to compare it: several cache misses per lookup,
 * which in a busy HTTP server (whose own work keeps evicting the table from the CPU caches) cost
 * about 5 µs per delivery, measured; Fastify itself costs about 20 µs. This index is an
 * open-addressing table of 32-bit hashes beside ring positions, in one `Int32Array`: a lookup
 * usually reads one cache line, and a candidate id string is compared (exactly, `===`) only when
 * its hash matches. The ring keeps the ids (and so the exact comparison) and their expiry times,
 * oldest first, so that dropping the oldest or the expired is O(1). Measured: about half the cost.
 */
export class CompletedEvents {
  /** Most ids held; the ring and the index grow (by doubling) up to it. */
  readonly #max: number;
  // The ring: ids and expiry times in completion order, from `#tail` (the oldest) over `#span`
  // positions. An id removed from the middle (found expired) leaves a hole (undefined) there;
  // `#tail` never rests on a hole.
  #ids: (string | undefined)[];
  #expires: Float64Array;
  /** Each position's hash (`hashOf` of its id): dropping the oldest need not read its string again. */
  #hashes: Int32Array;
  #tail = 0;
  #span = 0;
  #live = 0;
  /** Pairs [hash, ring position + 1]; a hash of 0 marks an empty slot. Load factor ≤ 1/2. */
  #slots: Int32Array;
  #mask: number;

  constructor(max: number) {
    this.#max = max;
    const capacity = Math.min(max, 1024);
    this.#ids = new Array(capacity);
    this.#expires = new Float64Array(capacity);
    this.#hashes = new Int32Array(capacity);
    const size = tableSize(capacity);
    this.#slots = new Int32Array(size * 2);
    this.#mask = size - 1;
  }

  /** Ids held (expired ones included until they are found or dropped). */
  get size(): number {
    return this.#live;
  }

  /**
   * When `id` expires, if it is held and expires after `now`; otherwise undefined. An expired
   * completion of `id` met on the way is removed. `hash` is `hashOf(id)`, when the caller has it.
   */
  expiresAfter(id: string, now: number, hash = hashOf(id)): number | undefined {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    for (;;) {
      const h = slots[2 * i] as number;
      if (h === 0) return undefined;
      if (h === hash) {
        const at = (slots[2 * i + 1] as number) - 1;
        if (this.#ids[at] === id) {
          const expiresAt = this.#expires[at] as number;
          if (expiresAt > now) return expiresAt;
          // Expired: forget it here. Slot i now holds the next of the probe run: look at it again.
          this.#removeSlot(i);
          this.#ids[at] = undefined;
          this.#live--;
          this.#skipHoles();
          continue;
        }
      }
      i = (i + 1) & mask;
    }
  }

  /**
   * Adds `id`, completed now, expiring at `expiresAt`; `hash` is `hashOf(id)`, when the caller has
   * it. The caller keeps `size` below `max`.
   */
  add(id: string, expiresAt: number, hash = hashOf(id)): void {
    if (this.#span === this.#ids.length) this.#grow();
    const at = (this.#tail + this.#span) % this.#ids.length;
    this.#ids[at] = id;
    this.#expires[at] = expiresAt;
    this.#hashes[at] = hash;
    this.#span++;
    this.#live++;
    this.#index(hash, at);
  }

  /** The oldest id's expiry time, or undefined when none is held. */
  oldestExpiresAt(): number | undefined {
    return this.#live === 0 ? undefined : this.#expires[this.#tail];
  }

  /** Drops the oldest id (the one completed longest ago). */
  dropOldest(): void {
    if (this.#live === 0) return;
    const at = this.#tail;
    const hash = this.#hashes[at] as number;
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    while (!(slots[2 * i] === hash && slots[2 * i + 1] === at + 1)) i = (i + 1) & mask;
    this.#removeSlot(i);
    this.#ids[at] = undefined;
    this.#live--;
    this.#skipHoles();
  }

  /** Moves `#tail` past holes (and past the oldest position once it is emptied). */
  #skipHoles(): void {
    const capacity = this.#ids.length;
    while (this.#span > 0 && this.#ids[this.#tail] === undefined) {
      this.#tail = (this.#tail + 1) % capacity;
      this.#span--;
    }
  }

  #index(hash: number, at: number): void {
    const slots = this.#slots;
    const mask = this.#mask;
    let i = hash & mask;
    while (slots[2 * i] !== 0) i = (i + 1) & mask;
    slots[2 * i] = hash;
    slots[2 * i + 1] = at + 1;
  }

  /** Empties slot `i` of the index (see `removeSlot`). */
  #removeSlot(i: number): void {
    removeSlot(this.#slots, this.#mask, i);
  }

  /**
   * The ring is full from end to end: doubles it (up to `max`), leaving the holes behind, and
   * rebuilds the index for it. At `max`, the caller has made room, so there are holes to drop.
   */
  #grow(): void {
    const capacity = Math.min(this.#max, this.#ids.length * 2);
    const ids: (string | undefined)[] = new Array(capacity);
    const expires = new Float64Array(capacity);
    const hashes = new Int32Array(capacity);
    const size = tableSize(capacity);
    this.#slots = new Int32Array(size * 2);
    this.#mask = size - 1;
    let next = 0;
    for (let k = 0; k < this.#span; k++) {
      const from = (this.#tail + k) % this.#ids.length;
      const id = this.#ids[from];
      if (id === undefined) continue;
      const hash = this.#hashes[from] as number;
      ids[next] = id;
      expires[next] = this.#expires[from] as number;
      hashes[next] = hash;
      this.#index(hash, next);
      next++;
    }
    this.#ids = ids;
    this.#expires = expires;
    this.#hashes = hashes;
    this.#tail = 0;
    this.#span = next;
  }
}

/** The index's size for `capacity` ids: a power of two, at least twice as many slots. */
export function tableSize(capacity: number): number {
  let size = 4;
  while (size < capacity * 2) size *= 2;
  return size;
}

/** Empties slot `i` of an index table (pairs [hash, position + 1]), shifting later slots of its probe run back (linear probing, no tombstones). */
export function removeSlot(slots: Int32Array, mask: number, i: number): void {
  for (let j = (i + 1) & mask; slots[2 * j] !== 0; j = (j + 1) & mask) {
    const home = (slots[2 * j] as number) & mask;
    // Slot j may move to the hole at i when its home does not lie cyclically in (i, j].
    if (i <= j ? home <= i || home > j : home <= i && home > j) {
      slots[2 * i] = slots[2 * j] as number;
      slots[2 * i + 1] = slots[2 * j + 1] as number;
      i = j;
    }
  }
  slots[2 * i] = 0;
  slots[2 * i + 1] = 0;
}

/** FNV-1a over the UTF-16 code units, never 0 (0 marks an empty slot). Not a secret: ids are signed data. */
export function hashOf(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return hash === 0 ? 1 : hash;
}
