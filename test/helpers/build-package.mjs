// Builds one package's dist (`node build-package.mjs @pixhook/cli`), and first its workspace
// dependencies', when one of them is missing or older than its sources or build config, as
// scripts/ensure-built.mjs does before `pnpm test`: this covers running one package's tests alone
// (the CLI's run its binary; the dashboard's run that binary, which loads the dashboard's dist).
// The tests run it under a lock, so test files started side by side never rebuild a binary while
// another one is running it.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { discoverPackages, pnpmCommand, staleBuild } from '@pixhook/test-helpers/build-state';

const target = process.argv[2];
const root = fileURLToPath(new URL('../../', import.meta.url));
const packages = new Map(discoverPackages(root).map((pkg) => [pkg.name, pkg]));
if (!target || !packages.has(target)) {
  throw new Error(`pixhook: build-package.mjs needs the name of a package under packages/; got ${target}.`);
}

/** The package and every workspace package it uses, however indirectly (the CLI loads @pixhook/bullmq, a dev and optional peer dependency). */
function withDependencies(name) {
  const selected = new Set([name]);
  for (const current of selected) {
    const { manifest } = packages.get(current);
    const uses = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies });
    for (const dep of uses) if (packages.has(dep)) selected.add(dep);
  }
  return [...selected];
}

const stale = withDependencies(target).filter((name) => staleBuild(packages.get(name)) !== undefined);
if (stale.length > 0) {
  const [command, prefix] = pnpmCommand();
  // `...` builds the package's workspace dependencies first, in dependency order.
  const filter = stale.some((name) => name !== target) ? `${target}...` : target;
  execFileSync(command, [...prefix, '--filter', filter, 'build'], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}
