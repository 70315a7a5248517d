import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { installRuntimes } from './runtimes.js';

/** Where a Bun binary may be, for the npm `bun` package installed under `runtimesDir`. */
function candidates(runtimesDir: string): string[] {
  const found: string[] = [];
  const require = createRequire(join(runtimesDir, 'package.json'));
  let bunDir: string;
  try {
    bunDir = dirname(require.resolve('bun/package.json'));
  } catch {
    return found;
  }
  // The npm package's postinstall puts the binary here.
  found.push(join(bunDir, 'bin', 'bun.exe'));
  // Without the postinstall, the platform package installed beside it still holds the binary;
  // baseline builds are for x64 CPUs without AVX2.
  const fromBun = createRequire(join(bunDir, 'package.json'));
  const arch = process.arch === 'arm64' ? 'aarch64' : process.arch;
  for (const suffix of ['', '-baseline', '-musl', '-musl-baseline']) {
    try {
      found.push(
        join(dirname(fromBun.resolve(`@oven/bun-${process.platform}-${arch}${suffix}/package.json`)), 'bin', 'bun'),
      );
    } catch {
      // not installed for this platform
    }
  }
  return found;
}

/**
 * The path of a Bun binary from the npm `bun` package that runs on this machine, or why there is
 * none. Installs the package first when it is missing (scripts/install-runtimes.mjs).
 */
export async function findBun(): Promise<{ path: string; version: string } | { path?: undefined; reason: string }> {
  const runtimes = await installRuntimes();
  if (runtimes.dir === undefined) return { reason: runtimes.error };
  const tried: string[] = [];
  for (const path of candidates(runtimes.dir)) {
    // The unbuilt package ships a small shell script in place of the binary.
    if (statSync(path, { throwIfNoEntry: false })?.isFile() !== true || statSync(path).size < 1_000_000) {
      tried.push(`${path}: not a binary`);
      continue;
    }
    const run = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 20_000 });
    if (run.status === 0) return { path, version: run.stdout.trim() };
    tried.push(`${path}: exit ${run.status ?? run.signal} ${run.stderr.trim().slice(0, 200)}`);
  }
  return {
    reason: `no runnable Bun binary from the npm "bun" package in ${runtimes.dir} (${tried.join('; ') || 'package not installed'})`,
  };
}
