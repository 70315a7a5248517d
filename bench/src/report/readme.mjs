// The README's short `bench` section: how to run, and this run's headline figures.
import { mark, mib, ratio } from './format.mjs';

export function readmeSection(results, targetList) {
  const lines = [
    '## Benchmarks',
    '',
    '```sh',
    'pnpm bench         # full run (a few minutes on 2 cores): tables, bench/results/latest.json, docs/benchmarks.md',
    'pnpm bench:smoke   # one short round of every scenario, as CI runs it',
    '```',
    '',
    `Latest figures (${results.machine.date.slice(0, 10)}, Node ${results.machine.node}, ${results.machine.cores} shared cores; ratios within one run,`,
    'median of the rounds with the lowest and highest in brackets). Full tables and method: [docs/benchmarks.md](docs/benchmarks.md).',
    '',
  ];
  if (results.verify) {
    const row = (size, kind) => results.verify.rows.find((r) => r.size === size && r.kind === kind);
    const sizes = [...new Set(results.verify.rows.map((r) => r.size))];
    lines.push(
      `- \`verify()\` ÷ (HMAC + \`JSON.parse\` floor), ASCII bodies: ${sizes.map((s) => `${s} ${ratio(row(s, 'ascii').vsFloorParse.pixhook)}`).join(', ')}.`,
      `- \`verify()\` speed-up over Stripe's \`constructEvent\`, ASCII bodies: ${sizes.map((s) => `${s} ${ratio(row(s, 'ascii').stripeSpeedup)}`).join(', ')}.`,
    );
  }
  if (results.http) {
    for (const c of results.http.comparisons) lines.push(`- ${c.label}, req/s: ${ratio(c.ratio)}.`);
  }
  if (results.memory) {
    lines.push(
      `- Peak RSS growth per in-flight 1 MiB delivery: ${results.memory.rows.map((r) => `${r.framework} ${mib(r.rssGrowthPerDelivery)}`).join(', ')}.`,
    );
  }
  lines.push('', 'Targets in that run:', '');
  for (const t of targetList) lines.push(`- ${mark(t.holds)}: ${t.target}`);
  return `${lines.join('\n')}\n`;
}
