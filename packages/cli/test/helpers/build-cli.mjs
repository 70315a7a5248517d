// Builds packages/cli/dist when it is missing or older than its sources (and @pixhook/core's dist
// when it is missing). The tests run it under a lock, so test files started side by side never
// rebuild the binary while another one is running it.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const cli = join(root, 'packages/cli');
const core = join(root, 'packages/core');

function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

function built(file) {
  return existsSync(file) ? statSync(file).mtimeMs : -1;
}

const coreMissing = ['index.js', 'testing.js', 'node.js'].some((name) => !existsSync(join(core, 'dist', name)));
const sources = Math.max(
  newest(join(cli, 'src')),
  newest(join(cli, 'package.json')),
  newest(join(cli, 'tsup.config.ts')),
);
const stale = Math.min(built(join(cli, 'dist/cli.js')), built(join(cli, 'dist/index.js'))) < sources;

if (coreMissing || stale) {
  // `...` builds the CLI's workspace dependencies (core) first.
  const filter = coreMissing ? '@pixhook/cli...' : '@pixhook/cli';
  execFileSync('pnpm', ['--filter', filter, 'build'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}
