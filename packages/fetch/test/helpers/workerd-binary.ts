import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The workerd binary miniflare will run, checked to start on this machine, or why it cannot. */
export function findWorkerd(): { path: string; version: string } | { path?: undefined; reason: string } {
  let path: string;
  try {
    const fromMiniflare = createRequire(require.resolve('miniflare'));
    path = (fromMiniflare('workerd') as { default: string }).default;
  } catch (error) {
    return { reason: `the npm "workerd" package (miniflare's runtime) is not usable: ${(error as Error).message}` };
  }
  const run = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  if (run.status === 0) return { path, version: run.stdout.trim() };
  return { reason: `${path} does not run here: exit ${run.status ?? run.signal} ${run.stderr.trim().slice(0, 200)}` };
}
