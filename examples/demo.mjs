// `pnpm demo`: starts a receiver per framework (Express, Fastify, Koa) on 127.0.0.1, sends each
// the same signed and forged deliveries, and prints what every one answered and which handlers
// ran. Exits 1 if any answer differs from the contract.
import { RECEIVERS, send } from './demo/receivers.mjs';
import { createDemoWebhooks, STEPS } from './demo/requests.mjs';

const frameworks = Object.keys(RECEIVERS);

/** Runs every step against one framework's receiver and returns the table rows. */
async function runAgainst(framework) {
  const demo = createDemoWebhooks();
  const receiver = await RECEIVERS[framework](demo.webhooks);
  try {
    const client = {
      demo,
      send: async (request) => ({
        ...(await send(receiver.port, request)),
        ran: demo.ran(request.headers['x-service-delivery']),
      }),
    };
    const rows = [];
    for (const step of STEPS) rows.push(...(await step(client)));
    return rows;
  } finally {
    await receiver.close();
  }
}

const answer = ({ status, code }) => (code ? `${status} ${code}` : String(status));
const handlers = (ran) => (ran.length ? ran.join(' → ') : '—');
const matches = (expected, actual) =>
  actual.status === expected.status && actual.code === expected.code && handlers(actual.ran) === handlers(expected.ran);

function printTable(header, rows) {
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => row[i].length)));
  const line = (row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  console.log(line(header));
  console.log(line(widths.map((w) => '─'.repeat(w))));
  for (const row of rows) console.log(line(row));
}

const timer = setTimeout(() => {
  console.error('demo: no result after 60 s; giving up.');
  process.exit(1);
}, 60_000);
timer.unref();

const results = {};
for (const framework of frameworks) results[framework] = await runAgainst(framework);

const reference = results[frameworks[0]];
const problems = [];
const rows = reference.map(({ label, expected }, i) => {
  const cells = frameworks.map((framework) => {
    const { actual } = results[framework][i];
    if (matches(expected, actual)) return `${actual.status} ✓`;
    problems.push(
      `${framework}, row ${i + 1} (${label}): expected ${answer(expected)}, handlers ${handlers(expected.ran)}; ` +
        `got ${answer(actual)}, handlers ${handlers(actual.ran)}`,
    );
    return `${answer(actual)} ✗`;
  });
  return [String(i + 1), label, answer(expected), ...cells, handlers(reference[i].actual.ran)];
});

console.log(`pixhook demo: ${reference.length} requests to ${frameworks.join(', ')} receivers on 127.0.0.1`);
console.log('✓ = the status, the error code and the handlers that ran are what the contract says\n');
printTable(['#', 'request', 'contract says', ...frameworks, `handlers run (${frameworks[0]})`], rows);
console.log('');
if (problems.length) {
  console.log(`${problems.length} answer(s) differ from the contract:`);
  for (const problem of problems) console.log(`  ✗ ${problem}`);
  process.exitCode = 1;
} else {
  console.log('Every answer matches the contract: signed events ran their handlers once; forged, stale,');
  console.log('oversized and duplicate requests ran none. Error codes: docs/errors.md.');
}
