/** A problem with what the user typed (a missing secret, an unreadable file): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit codes of every command. */
export const EXIT = {
  /** The check passed: a 2xx in time, delivered, verified. */
  ok: 0,
  /** The check failed: no 2xx, auto-disabled, does not verify. */
  failed: 1,
  /** The command could not run: bad options or input. */
  usage: 2,
} as const;
