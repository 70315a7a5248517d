// Prints the results as plain tables.
import { textTable } from './format.mjs';
import {
  comparisonTable,
  fixedTable,
  httpTable,
  inboxCostTable,
  inboxListTable,
  lambdaTable,
  memoryTable,
  nestTable,
  orderingTable,
  pgBossTable,
  postgresTable,
  queuedTable,
  schemaTable,
  targetTable,
  tenantTable,
  verifyTables,
} from './sections.mjs';

export function printResults(results, targetList) {
  const out = (title, t) => console.log(`\n${title}\n${textTable(t.head, t.rows)}`);
  if (results.verify) for (const t of verifyTables(results.verify)) out(`Verification, ${t.title}`, t);
  if (results.http) {
    out('HTTP, 1 KiB deliveries, 32 connections', httpTable(results.http));
    out('HTTP comparisons (ratios per round, median and min–max)', comparisonTable(results.http));
    const nest = nestTable(results.http);
    if (nest.rows.length > 0) out('HTTP, NestJS next to plain Express and Fastify', nest);
    const queued = queuedTable(results.http);
    if (queued.rows.length > 0) out('HTTP, queued mode (BullMQ) next to inline processing', queued);
    const pgBoss = pgBossTable(results.http);
    if (pgBoss.rows.length > 0) out('HTTP, queued mode (pg-boss) next to inline PostgresStore', pgBoss);
    const postgres = postgresTable(results.http);
    if (postgres.rows.length > 0) out('HTTP, Postgres next to MemoryStore and RedisStore', postgres);
    const { fixed } = results.http;
    if (fixed)
      out(
        `HTTP, at a fixed ${fixed.rate.toLocaleString('en-US')} req/s (at most ${fixed.connections} connections)`,
        fixedTable(fixed),
      );
    if (results.http.redis.skipped) console.log(`\nnote: ${results.http.redis.skipped}`);
    if (results.http.postgres?.skipped) console.log(`\nnote: ${results.http.postgres.skipped}`);
  }
  if (results.memory) out('Memory, 1 MiB deliveries all in flight at once', memoryTable(results.memory));
  if (results.lambda) out('Lambda handler in process, 1 KiB deliveries', lambdaTable(results.lambda));
  if (results.inbox?.cost) {
    const { cost } = results.inbox;
    out(
      `Inbox: the archive's cost per delivery, ${results.inbox.framework}, 1 KiB deliveries, ${cost.connections} connections`,
      inboxCostTable(results.inbox),
    );
    out('Inbox: list() time, 50 events a page, median in ms', inboxListTable(results.inbox));
    for (const what of ['redis', 'postgres'])
      if (results.inbox[what]?.skipped) console.log(`\nnote: inbox: ${results.inbox[what].skipped}`);
  }
  if (results.schema) out('Schemas in process, 1 KiB deliveries', schemaTable(results.schema));
  if (results.tenant) out('A secret per tenant in process, 1 KiB deliveries', tenantTable(results.tenant));
  if (results.ordering) {
    out('The ordering guard and named handlers in process, 1 KiB deliveries', orderingTable(results.ordering));
    for (const note of results.ordering.notes ?? []) console.log(`\nnote: ordering: ${note}`);
  }
  out('Targets', targetTable(targetList));
}
