/** The pg-boss types @pixhook/postgres re-exports until its next minor are @pixhook/pg-boss's (vitest typecheck). */
import type * as moved from '@pixhook/pg-boss';
import type * as postgres from '@pixhook/postgres';
import { describe, expectTypeOf, it } from 'vitest';

describe('the deprecated pg-boss names of @pixhook/postgres', () => {
  it('are the types of @pixhook/pg-boss', () => {
    expectTypeOf<postgres.PgBossQueue>().toEqualTypeOf<moved.PgBossQueue>();
    expectTypeOf<typeof postgres.pgBossJobIdFor>().toEqualTypeOf<typeof moved.pgBossJobIdFor>();
    expectTypeOf<ConstructorParameters<typeof postgres.PgBossQueue>>().toEqualTypeOf<
      ConstructorParameters<typeof moved.PgBossQueue>
    >();
    expectTypeOf<postgres.PgBossBackoffOptions>().toEqualTypeOf<moved.PgBossBackoffOptions>();
    expectTypeOf<postgres.PgBossDeadLetter>().toEqualTypeOf<moved.PgBossDeadLetter>();
    expectTypeOf<postgres.PgBossLike>().toEqualTypeOf<moved.PgBossLike>();
    expectTypeOf<postgres.PgBossListOptions>().toEqualTypeOf<moved.PgBossListOptions>();
    expectTypeOf<postgres.PgBossQueueOptions>().toEqualTypeOf<moved.PgBossQueueOptions>();
    expectTypeOf<postgres.PgBossWorker>().toEqualTypeOf<moved.PgBossWorker>();
    expectTypeOf<postgres.PgBossWorkerOptions>().toEqualTypeOf<moved.PgBossWorkerOptions>();
    expectTypeOf<postgres.ProcessingWebhooks>().toEqualTypeOf<moved.ProcessingWebhooks>();
  });
});
