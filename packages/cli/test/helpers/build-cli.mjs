// Builds packages/cli/dist (and @pixhook/core's first when its dist is stale too) when it is
// missing or older than its sources or build config, as scripts/ensure-built.mjs does before
// `pnpm test`: this covers running the CLI tests alone. The tests run it under a lock, so test files
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

const coreStale = stale('@pixhook/core');
if (coreStale || stale('@pixhook/cli')) {
  // `...` builds the CLI's workspace dependencies (core) first.
  const [command, prefix] = pnpmCommand();
  const filter = coreStale ? '@pixhook/cli...' : '@pixhook/cli';
  execFileSync(command, [...prefix, '--filter', filter, 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
