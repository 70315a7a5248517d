// The README's short `bench` section: how to run, and this run's figure for every target.
import { mark } from './format.mjs';

export function readmeSection(results, targetList) {
  const m = results.machine;
  const lines = [
    '## Benchmarks',
    '',
    '```sh',
    'pnpm bench         # full run (a few minutes on 2 cores): tables, bench/results/latest.json, docs/benchmarks.md',
    'pnpm bench:smoke   # one short round of every scenario, as CI runs it',
    '```',
    '',
    `Latest run (${m.date.slice(0, 10)}, Node ${m.node}, ${m.cores} shared cores): ratios measured within the run, median of the`,
    'rounds with the lowest and highest in brackets (for verify, the worst size and body kind). Full tables, method',
    'and why each miss happens: [docs/benchmarks.md](docs/benchmarks.md).',
    '',
    ...targetList.map((t) => `- ${t.info ? '(no target)' : mark(t.holds)}: ${t.target}: ${t.worst}`),
  ];
  return `${lines.join('\n')}\n`;
}
