// What the figures were measured on.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { pinning } from './pin.mjs';

function version(pkg) {
  try {
    const file = new URL(`../node_modules/${pkg}/package.json`, import.meta.url);
    return JSON.parse(readFileSync(file, 'utf8')).version;
  } catch {
    return 'unknown';
  }
}

/** The version of `pkg` as `from` (a package this one depends on) resolves it. */
function versionUnder(from, pkg) {
  try {
    const require = createRequire(import.meta.url);
    return createRequire(require.resolve(from))(`${pkg}/package.json`).version;
  } catch {
    return 'unknown';
  }
}

export function machine() {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpu: cpus[0]?.model?.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))),
    pinning: pinning.note,
    versions: Object.fromEntries(
      [
        'stripe',
        '@octokit/webhooks',
        '@octokit/webhooks-methods',
        'standardwebhooks',
        'autocannon',
        'express',
        'fastify',
        'koa',
        'pg',
        '@nestjs/core',
        '@nestjs/platform-express',
        '@nestjs/platform-fastify',
        'zod',
        'valibot',
      ]
        .map((name) => [name, version(name)])
        // The queue engine of the queued servers, a dependency of @pixhook/bullmq rather than of this package.
        .concat([['bullmq', version('@pixhook/bullmq/node_modules/bullmq')]])
        // The frameworks under Nest's platforms (dependencies of theirs, not of this package).
        .concat([
          ['express (under Nest)', versionUnder('@nestjs/platform-express', 'express')],
          ['fastify (under Nest)', versionUnder('@nestjs/platform-fastify', 'fastify')],
        ]),
    ),
  };
}
