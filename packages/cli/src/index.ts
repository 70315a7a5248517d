// What `@pixhook/cli` exports besides the `pixhook` command: the delivery client, the signature
// diagnosis, the retry schedule and its simulation, and the checks and explanations the commands
// print, and openInbox / openDeadLetters (production data: an archive, a queue's dead letters).
// @pixhook/dashboard is built on them.
export { receiverUrlProblem, secretProblem } from './checks.js';
export {
  type AttemptOutcome,
  DEFAULT_MAX_ANSWER_BYTES,
  type DeliveryRequest,
  deliver,
  sentHeaders,
} from './deliver.js';
export {
  type DiagnoseInput,
  type Diagnosis,
  type DiagnosisStep,
  diagnoseSignature,
  diagnosesCode,
} from './diagnose.js';
export { explainCode } from './explanations.js';
export { FailedError, UsageError } from './io/errors.js';
export { outcomeHint } from './io/hints.js';
export { errorCode } from './io/output.js';
export {
  DEFAULT_BULLMQ_PREFIX,
  DEFAULT_INBOX_PREFIX,
  DEFAULT_INBOX_SCHEMA,
  DEFAULT_INBOX_TABLE,
  DEFAULT_PGBOSS_SCHEMA,
  DEFAULT_QUEUE,
  type DeadLetterLocation,
  type InboxLocation,
  type OpenedDeadLetters,
  type OpenedInbox,
  openDeadLetters,
  openInbox,
} from './io/production.js';
export { headersFromRaw } from './io/raw-headers.js';
export type { CauseId, LikelyCause } from './likely-causes.js';
export {
  DEFAULT_DEADLINE_SECONDS,
  DEFAULT_MAX_ATTEMPTS,
  formatDuration,
  RETRY_DELAYS_SECONDS,
  retryDelays,
} from './schedule.js';
export {
  type AttemptRecord,
  type SimulateOptions,
  type SimulationResult,
  type SimulationUpdate,
  simulateDelivery,
} from './simulate-delivery.js';
