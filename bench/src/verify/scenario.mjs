// Runs the verification benchmark in its own pinned process and turns its timings into ratios.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { CORE } from '../pin.mjs';
import { ratios, spread } from '../stats.mjs';

const script = fileURLToPath(new URL('./run.mjs', import.meta.url));

/**
 * Targets of the issue: verify ≤ 1.10× floor + parse (the stretch: 1.05×); ≥ 1.35× as fast as
 * Stripe on bodies with non-ASCII text, and never slower than Stripe on ASCII bodies, where Stripe
 * itself runs near the floor + parse.
 */
export const VERIFY_TARGETS = { maxOverFloorParse: 1.1, minStripeSpeedup: { utf8: 1.35, ascii: 1 } };

export async function runVerify({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  const child = await startChild(script, { core: CORE.client });
  try {
    const { candidates, rows } = await child.call({ rounds, minCpuTimeMs, warmCpuTimeMs });
    for (const row of rows) {
      row.time = Object.fromEntries(Object.entries(row.ns).map(([id, ns]) => [id, spread(ns)]));
      // Per round, each candidate against floor + parse of the same round.
      row.vsFloorParse = Object.fromEntries(
        Object.entries(row.ns).map(([id, ns]) => [id, spread(ratios(ns, row.ns.floorParse))]),
      );
      if (row.ns.stripe) row.stripeSpeedup = spread(ratios(row.ns.stripe, row.ns.pixhook));
      row.targets = {
        overFloorParse: row.vsFloorParse.pixhook.median <= VERIFY_TARGETS.maxOverFloorParse,
        stripeSpeedup: row.stripeSpeedup?.median >= VERIFY_TARGETS.minStripeSpeedup[row.kind],
      };
    }
    return { candidates, rows };
  } finally {
    await child.stop();
  }
}
