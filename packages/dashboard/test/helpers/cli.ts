import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// The dashboard's tests start it as a user does, `pixhook dashboard` (the CLI loads this package
// on demand): they run the CLI's binary with the CLI tests' own helpers.
export { type CliResult, type RunOptions, run, SECRET, start } from '../../../cli/test/helpers/cli.js';

const BUILD = fileURLToPath(new URL('./build-dashboard.mjs', import.meta.url));

/** Builds the CLI and the dashboard when a dist is missing or stale, under the CLI tests' lock. */
export function ensureBuilt(): void {
  try {
    execFileSync('flock', ['/tmp/pixhook-cli-build.lock', process.execPath, BUILD], { stdio: 'inherit' });
  } catch (error) {
    // Without flock (not Linux), build unlocked.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    execFileSync(process.execPath, [BUILD], { stdio: 'inherit' });
  }
}
