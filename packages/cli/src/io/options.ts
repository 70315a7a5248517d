import { EVENT_TYPES } from '@pixhook/core';
import { InvalidArgumentError, Option } from 'commander';
import { receiverUrlProblem } from '../checks.js';
import { UsageError } from './errors.js';

/** `--secret`, also read from PIXHOOK_SECRET; its value is never printed, not even in help. */
export function secretOption(): Option {
  return new Option(
    '-s, --secret <secret>',
    "the endpoint's signing secret (prefer PIXHOOK_SECRET: a command line is visible to other users)",
  ).env('PIXHOOK_SECRET');
}

/** The secret from `--secret` or PIXHOOK_SECRET, or a usage error saying how to give one. */
export function requireSecret(secret: string | undefined): string {
  if (secret === undefined) {
    throw new UsageError('A signing secret is needed: set PIXHOOK_SECRET, or pass --secret.');
  }
  return secret;
}

/** Parses a positive number of seconds (fractions allowed). */
export function positiveNumber(value: string): number {
  const number = Number(value);
  if (value.trim() === '' || !Number.isFinite(number) || number <= 0) {
    throw new InvalidArgumentError('expected a positive number.');
  }
  return number;
}

/** Parses a whole number of at least 1. */
export function positiveInteger(value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1) throw new InvalidArgumentError('expected a whole number of at least 1.');
  return number;
}

/** Parses a whole number of at least 0. */
export function nonNegativeInteger(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number of at least 0.');
  return Number(value);
}

/** Parses a TCP port, 0 for any free one. */
export function portNumber(value: string): number {
  const port = nonNegativeInteger(value);
  if (port > 65_535) throw new InvalidArgumentError('expected a port from 0 to 65535.');
  return port;
}

/** Above this, a "Unix seconds" value is in fact milliseconds (10^11 s is the year 5138). */
const MILLISECONDS_FROM = 1e11;

/**
 * Parses Unix seconds, kept as text so leading zeros stay (they are signed). Refuses fractions,
 * signs and exponents, and values that look like milliseconds (`Date.now()`): the service signs
 * seconds, and a millisecond `t` would be a silent mistake.
 */
export function unixSeconds(value: string): string {
  if (!/^\d+$/.test(value)) {
    throw new InvalidArgumentError('expected Unix seconds: a whole number, digits only (e.g. 1700000000).');
  }
  if (Number(value) > MILLISECONDS_FROM) {
    throw new InvalidArgumentError(
      `${value} looks like milliseconds (Date.now()); Unix seconds are Math.floor(Date.now() / 1000), e.g. ${Math.floor(Number(value) / 1000)}.`,
    );
  }
  return value;
}

/** Checks a receiver URL (http:// or https://) and returns it normalised. */
export function httpUrl(value: string): string {
  const problem = receiverUrlProblem(value);
  if (problem) throw new InvalidArgumentError(problem);
  return new URL(value).href;
}

/** Help text for `--type`. */
export const TYPE_HELP = `the event type: ${EVENT_TYPES.join(', ')} (another type is sent with data.object {} unless --data)`;
