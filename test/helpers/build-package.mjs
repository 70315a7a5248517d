// Builds packages/cli/dist (and first its workspace dependencies, @pixhook/core and
// @pixhook/bullmq, when one of their dists is stale too) when it is missing or older than its
// sources or build config, as scripts/ensure-built.mjs does before `pnpm test`: this covers
// running the CLI tests alone. The tests run it under a lock, so test files
// started side by side never rebuild the binary while another one is running it.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { discoverPackages, pnpmCommand, staleBuild } from '@pixhook/test-helpers/build-state';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const packages = new Map(discoverPackages(root).map((pkg) => [pkg.name, pkg]));
const stale = (name) => {
  const pkg = packages.get(name);
  if (!pkg) throw new Error(`pixhook: ${name} is not a package under packages/.`);
  return staleBuild(pkg) !== undefined;
};

// The built CLI loads @pixhook/bullmq's dist when a dead-letters command runs.
const dependenciesStale = stale('@pixhook/core') || stale('@pixhook/bullmq');
if (dependenciesStale || stale('@pixhook/cli')) {
  // `...` builds the CLI's workspace dependencies (core, bullmq) first.
  const [command, prefix] = pnpmCommand();
  const filter = dependenciesStale ? '@pixhook/cli...' : '@pixhook/cli';
  execFileSync(command, [...prefix, '--filter', filter, 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
