// Runs the Lambda handler benchmark in its own pinned process and turns its timings into ratios.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { CORE } from '../pin.mjs';
import { ratios, spread } from '../stats.mjs';

const script = fileURLToPath(new URL('./run.mjs', import.meta.url));

/** The baseline every handler row is a ratio of. */
export const LAMBDA_BASELINE = 'handle';

export async function runLambda({ rounds, minCpuTimeMs, warmCpuTimeMs, fill }) {
  const child = await startChild(script, { core: CORE.client });
  try {
    const { candidates, ns, ...run } = await child.call({ rounds, minCpuTimeMs, warmCpuTimeMs, fill });
    const ops = (id) => ns[id].map((value) => 1e9 / value);
    const rows = candidates.map(({ id, label }) => ({
      id,
      label,
      ns: ns[id],
      time: spread(ns[id]),
      ops: spread(ops(id)),
      // Per round, against webhooks.handle() of the same round: ops/s ratio, and the CPU it adds per call.
      vsHandle: spread(ratios(ops(id), ops(LAMBDA_BASELINE))),
      addedNs: spread(ns[id].map((value, i) => value - ns[LAMBDA_BASELINE][i])),
    }));
    return { ...run, rows };
  } finally {
    await child.stop();
  }
}
