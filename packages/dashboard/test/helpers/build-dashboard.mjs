// Builds packages/dashboard/dist (and first the CLI and its workspace dependencies, when one of
// their dists is stale too) when it is missing or older than its sources or build config, as
// scripts/ensure-built.mjs does before `pnpm test`: this covers running the dashboard's tests
// alone. Run under the CLI tests' lock, so no test file rebuilds a binary another one is running.
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

// `pixhook dashboard` runs the CLI's dist, which loads the dashboard's dist, which imports the CLI's.
const dependenciesStale = stale('@pixhook/core') || stale('@pixhook/bullmq') || stale('@pixhook/cli');
if (dependenciesStale || stale('@pixhook/dashboard')) {
  // `...` builds the dashboard's workspace dependencies (core, cli and the CLI's bullmq) first.
  const [command, prefix] = pnpmCommand();
  const filter = dependenciesStale ? '@pixhook/dashboard...' : '@pixhook/dashboard';
  execFileSync(command, [...prefix, '--filter', filter, 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
