import type { WebhookVerificationError } from '../protocol/errors.js';

/**
 * What a mode made of a verified delivery, for the pipeline to answer: `done` (200, `duplicate` for
 * one handled before), `queued` (202, written to the queue) or `rejected` (the error's status).
 */
export type Outcome =
  | { kind: 'done'; duplicate: boolean }
  | { kind: 'queued' }
  | { kind: 'rejected'; error: WebhookVerificationError };

export const DONE: Outcome = { kind: 'done', duplicate: false };
export const DUPLICATE: Outcome = { kind: 'done', duplicate: true };
export const QUEUED: Outcome = { kind: 'queued' };
