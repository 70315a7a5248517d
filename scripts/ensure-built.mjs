// Builds the packages whose dist is missing or older than their sources or build config (and
// the packages that depend on them); when every dist is fresh it prints nothing. Root scripts that
// run built code (`test`, `test:slow`, `demo`, `bench`, `bench:smoke`) call it first, so CI builds
// once and a local run rebuilds only after a change. The build's own output shows only on failure.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { discoverPackages, pnpmCommand, staleBuild } from '@pixhook/test-helpers/build-state';

const root = fileURLToPath(new URL('..', import.meta.url));
const packages = discoverPackages(root);
const stale = packages.flatMap((pkg) => {
  const reason = staleBuild(pkg);
  return reason === undefined ? [] : [{ name: pkg.name, reason: reason.replace(/[:;] run `pnpm build` first\.$/, '') }];
});

/** The stale packages and every public package that depends on one of them, however indirectly. */
function withDependents(names) {
  const selected = new Set(names);
  for (let grew = true; grew; ) {
    grew = false;
    for (const { name, manifest } of packages) {
      const uses = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies });
      if (!selected.has(name) && uses.some((dep) => selected.has(dep))) {
        selected.add(name);
        grew = true;
      }
    }
  }
  return [...selected];
}

if (stale.length > 0) {
  const started = performance.now();
  const names = withDependents(stale.map(({ name }) => name));
  process.stdout.write(`pixhook: building ${names.join(', ')} (${stale[0]?.reason})…`);
  const [command, prefix] = pnpmCommand();
  // pnpm -r runs the selected packages' builds in dependency order.
  const filters = names.flatMap((name) => ['--filter', name]);
  const result = spawnSync(command, [...prefix, '-r', ...filters, 'build'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) {
    process.stdout.write(' failed:\n');
    process.stderr.write(
      `${result.stdout ?? ''}${result.stderr ?? ''}${result.error ? `${result.error.message}\n` : ''}`,
    );
    process.exit(result.status ?? 1);
  }
  process.stdout.write(` done in ${((performance.now() - started) / 1000).toFixed(1)} s.\n`);
}
