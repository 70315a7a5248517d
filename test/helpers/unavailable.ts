import { describe } from 'vitest';

/**
 * What a test file does when a server it needs cannot run here: under CI (CI=true) it throws, so the
 * run fails loudly; elsewhere it prints why once and gives `describe.skip`. With nothing missing,
 * `describe`.
 *
 * @param what - the suites that need it, e.g. 'The Redis tests (@pixhook/redis, @pixhook/bullmq)'
 * @param missing - why the server cannot run, or undefined when it can
 * @param hint - how to install it
 */
export function describeIfAvailable(what: string, missing: string | undefined, hint: string): typeof describe {
  if (!missing) return describe;
  if (process.env.CI === 'true' || process.env.CI === '1') {
    throw new Error(`${what} cannot run here, and CI is set: ${missing}; ${hint}.`);
  }
  console.warn(`\n[pixhook] SKIPPING ${what}: ${missing}. To run them, ${hint}.\n`);
  return describe.skip as typeof describe;
}
