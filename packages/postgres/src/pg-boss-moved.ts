/**
 * The pg-boss queue moved to `@pixhook/pg-boss`. These re-exports keep
 * `import { PgBossQueue } from '@pixhook/postgres'` working until the next minor: the same class
 * (a subclass that warns once when built), the same function, the same types, each `@deprecated` so
 * that editors strike it through. Loading them loads `@pixhook/pg-boss`, never pg-boss itself.
 */

import * as moved from '@pixhook/pg-boss';

const MOVED_MESSAGE =
  "pixhook: PgBossQueue moved to @pixhook/pg-boss: npm install @pixhook/pg-boss and import { PgBossQueue } from '@pixhook/pg-boss'. Its re-export from @pixhook/postgres is deprecated and removed in the next minor version.";

let warned = false;

/** Warns once per process, as Node's own deprecations do (and as `--no-deprecation` silences). */
function warnMoved(): void {
  if (warned) return;
  warned = true;
  process.emitWarning(MOVED_MESSAGE, { type: 'DeprecationWarning', code: 'PIXHOOK_PG_BOSS_MOVED' });
}

/**
 * `@pixhook/pg-boss`'s `PgBossQueue`, re-exported here until the next minor: building one warns
 * once (`DeprecationWarning` `PIXHOOK_PG_BOSS_MOVED`) and otherwise behaves as that class; every
 * `PgBossQueue` of either import passes `instanceof` with either.
 *
 * @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor
 */
export class PgBossQueue extends moved.PgBossQueue {
  /** A queue built from `@pixhook/pg-boss` is a `PgBossQueue` of this import too. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return value instanceof moved.PgBossQueue;
  }

  constructor(boss: moved.PgBossLike, options?: moved.PgBossQueueOptions) {
    super(boss, options);
    warnMoved();
  }
}

/**
 * `@pixhook/pg-boss`'s `pgBossJobIdFor`, the same function.
 *
 * @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor
 */
export const pgBossJobIdFor: typeof moved.pgBossJobIdFor = moved.pgBossJobIdFor;

/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossBackoffOptions = moved.PgBossBackoffOptions;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossDeadLetter = moved.PgBossDeadLetter;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossLike = moved.PgBossLike;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossListOptions = moved.PgBossListOptions;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossQueueOptions = moved.PgBossQueueOptions;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossWorker = moved.PgBossWorker;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type PgBossWorkerOptions = moved.PgBossWorkerOptions;
/** @deprecated Import from @pixhook/pg-boss; this re-export is removed in the next minor */
export type ProcessingWebhooks = moved.ProcessingWebhooks;
