// Memory: `count` concurrent 1 MiB deliveries to each adapter, held in their handlers until all
// are in flight. Reports peak RSS growth per in-flight delivery, and what each still holds then.
import { fileURLToPath } from 'node:url';
import { startChild } from '../children.mjs';
import { CORE } from '../pin.mjs';

const serverScript = fileURLToPath(new URL('./server.mjs', import.meta.url));
const loadScript = fileURLToPath(new URL('./load.mjs', new URL('../http/', import.meta.url)));

/** Target of the issue: peak RSS growth per in-flight 1 MiB delivery at most 4 MiB. */
export const MEMORY_TARGET_BYTES = 4 * 1024 * 1024;
export const FRAMEWORKS = ['express', 'fastify', 'koa'];
const MiB = 1024 * 1024;

export async function runMemory({ count, bytes = MiB, rounds = 1 }) {
  const load = await startChild(loadScript, { core: CORE.client });
  const rows = [];
  const problems = [];
  try {
    for (const framework of FRAMEWORKS) {
      const server = await startChild(serverScript, {
        core: CORE.server,
        execArgv: ['--expose-gc'],
        args: [JSON.stringify({ framework, holdMs: 15_000 })],
      });
      try {
        const { port } = server.ready;
        // One small burst first, so that code is compiled and pools exist before the baseline.
        await server.call({ cmd: 'prepare', count: 4 });
        await load.call({ cmd: 'burst', port, count: 4, bytes });
        await server.call({ cmd: 'report' });
        const perRound = [];
        for (let round = 0; round < rounds; round++) {
          const { baseline, resettable } = await server.call({ cmd: 'prepare', count });
          const { statuses } = await load.call({ cmd: 'burst', port, count, bytes });
          const report = await server.call({ cmd: 'report' });
          const bad = statuses.filter((s) => s !== 200);
          if (bad.length > 0)
            problems.push(
              `memory ${framework}: ${bad.length} of ${count} deliveries failed (${[...new Set(bad)].join(', ')})`,
            );
          if (!report.reachedBarrier)
            problems.push(`memory ${framework}: the ${count} deliveries were never all in flight at once`);
          const peak = resettable && report.peakRss !== undefined ? report.peakRss : report.sampled.rss;
          const held = report.atBarrier ?? baseline;
          perRound.push({
            peakRssSource: resettable && report.peakRss !== undefined ? 'VmHWM' : 'sampled every 1 ms',
            rssGrowthPerDelivery: (peak - baseline.rss) / count,
            peakBuffersPerDelivery: (report.sampled.arrayBuffers - baseline.arrayBuffers) / count,
            heldBuffersPerDelivery: (held.arrayBuffers - baseline.arrayBuffers) / count,
            heldHeapPerDelivery: (held.heapUsed - baseline.heapUsed) / count,
          });
        }
        // The worst round counts.
        const worst = perRound.reduce((a, b) => (b.rssGrowthPerDelivery > a.rssGrowthPerDelivery ? b : a));
        rows.push({
          framework,
          count,
          bodyBytes: bytes,
          ...worst,
          holds: worst.rssGrowthPerDelivery <= MEMORY_TARGET_BYTES,
          // No second full copy at the peak (socket chunks in transit aside), and none kept while
          // the handlers run: the parsed event is all a delivery holds then.
          bodyHeldOnce: worst.peakBuffersPerDelivery < 2 * bytes && worst.heldBuffersPerDelivery < 0.5 * bytes,
        });
      } finally {
        await server.call({ cmd: 'close' }).catch(() => {});
        await server.stop();
      }
    }
  } finally {
    await load.stop();
  }
  return { rows, problems };
}
