/** A problem with what the user typed (a missing secret, an unreadable file): exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The command ran but could not do what was asked (no such dead letter, Redis unreachable): exit code 1. */
export class FailedError extends Error {
  override readonly name = 'FailedError';
}

/** Exit codes of every command. */
export const EXIT = {
  /** The check passed: a 2xx in time, delivered, verified. */
  ok: 0,
  /** The check failed: no 2xx, auto-disabled, does not verify; no such dead letter, Redis unreachable. */
  failed: 1,
  /** The command could not run: bad options or input. */
  usage: 2,
} as const;
