import type { Pool } from 'pg';
import { archiveMigrationSql } from './archive-sql.js';
import { assertPool } from './database.js';
import {
  type ArchiveTableOptions,
  resolveArchiveTableOptions,
  resolveTableOptions,
  type TableOptions,
} from './options.js';
import { migrationSql } from './sql.js';

/**
 * The SQL that creates pixhook's table (and its index), for your own migration tool. With no
 * options it is the package's `migration.sql` (`node_modules/@pixhook/postgres/sql/migration.sql`). Safe to run
 * again: every statement is `IF NOT EXISTS`.
 *
 * @example
 * // a knex / node-pg-migrate / Drizzle Kit migration
 * await db.raw(migrationSql({ schema: 'webhooks' }))
 */
export function getMigrationSql(options?: TableOptions): string {
  return migrationSql(resolveTableOptions('getMigrationSql', options));
}

/**
 * Creates pixhook's table if it does not exist, in one transaction, under an advisory lock (so
 * several instances starting at once do not race). Call it at startup, before the first delivery.
 * The schema must exist.
 *
 * @example
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * await migrate(pool)
 */
export async function migrate(pool: Pool, options?: TableOptions): Promise<void> {
  assertPool('migrate', pool);
  await runMigration(pool, migrationSql(resolveTableOptions('migrate', options)));
}

/**
 * The SQL that creates the archive's tables (`PostgresArchive`: the events, their timeline and the
 * replay requests, with their indexes), for your own migration tool. With no options it is the
 * package's `archive-migration.sql` (`node_modules/@pixhook/postgres/sql/archive-migration.sql`).
 * Safe to run again: every statement is `IF NOT EXISTS`.
 */
export function getArchiveMigrationSql(options?: ArchiveTableOptions): string {
  return archiveMigrationSql(resolveArchiveTableOptions('getArchiveMigrationSql', options));
}

/**
 * Creates the archive's tables if they do not exist, in one transaction, under the same advisory
 * lock as `migrate()`. Call it at startup, before `new PostgresArchive(pool)` records anything.
 * The schema must exist.
 *
 * @example
 * await migrateArchive(pool)
 * const webhooks = new Webhooks({ secret, archive: new PostgresArchive(pool) })
 */
export async function migrateArchive(pool: Pool, options?: ArchiveTableOptions): Promise<void> {
  assertPool('migrateArchive', pool);
  await runMigration(pool, archiveMigrationSql(resolveArchiveTableOptions('migrateArchive', options)));
}

/** Runs `sql` in one transaction, under an advisory lock (instances starting at once do not race). */
async function runMigration(pool: Pool, sql: string): Promise<void> {
  const client = await pool.connect();
  let failure: Error | undefined;
  try {
    await client.query('BEGIN');
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('pixhook:migrate', 0))");
    await client.query(sql);
    await client.query('COMMIT');
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error));
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release(failure);
  }
}
