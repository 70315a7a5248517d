// Runs the schema benchmark (./run.mjs) in its own process pinned to the load generator's core, and
// turns its timings into rows: time per call, and per round the ratio to its baseline and the CPU added.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { inProcessRows } from '../inprocess.mjs';
import { CORE } from '../pin.mjs';

const script = fileURLToPath(new URL('./run.mjs', import.meta.url));

export async function runSchema({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  const child = await startChild(script, { core: CORE.client });
  try {
    const { candidates, ns, ...run } = await child.call({ rounds, minCpuTimeMs, warmCpuTimeMs });
    return { ...run, rows: inProcessRows(candidates, ns) };
  } finally {
    await child.stop();
  }
}
