/** The directory of initdb, pg_ctl and postgres, or undefined when none was found. */
export const postgresBinDir: string | undefined;

/** Why no Postgres cluster can run here, or undefined when one can. */
export const postgresUnavailable: string | undefined;

/** The command line that runs a Postgres binary: through `runuser` as the `postgres` user when root. */
export function postgresCommand(tool: string, args: string[]): [string, string[]];

/**
 * Runs a Postgres binary (as `postgresCommand` says, then through `wrap`, e.g. to pin it to a core);
 * resolves with its output, rejects when it fails.
 */
export function runPostgresTool(
  tool: string,
  args: string[],
  wrap?: (command: string, argv: string[]) => [string, string[]],
): Promise<string>;

/** A temporary directory for a cluster (owned by the `postgres` user when root) and its data directory inside. */
export function clusterDirectory(prefix: string): { dir: string; dataDir: string };
