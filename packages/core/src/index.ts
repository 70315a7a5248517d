export type { ReplayManyOptions, ReplayOutcome, ReplayResult } from './modes/replay.js';
export { WEBHOOKS_OPTION_NAMES, type WebhooksOptions } from './pipeline/options.js';
export {
  bodyTimeout,
  ERROR_STATUS,
  isWebhookVerificationError,
  type WebhookErrorCode,
  WebhookVerificationError,
} from './protocol/errors.js';
export { deliveryKey, eventKey } from './protocol/event-key.js';
export {
  type AnyEvent,
  type DataObject,
  type DefaultEventDataMap,
  EVENT_TYPES,
  type EventDataMap,
  type EventOf,
  type EventType,
  type KnownEvent,
  type UnknownEvent,
  type UnknownEventType,
  type WebhookEvent,
} from './protocol/events.js';
export type { HeadersInput } from './protocol/headers.js';
export {
  type AttemptEstimate,
  estimateAttempt,
  SERVICE_ATTEMPTS,
  SERVICE_RETRY_DELAYS_SECONDS,
} from './protocol/retry-schedule.js';
export { MAX_TENANT_CHARACTERS, type SecretCacheOptions } from './protocol/secret-lookup.js';
export {
  MAX_SECRETS,
  type SecretEntry,
  type SecretLookup,
  type SecretMatch,
  type SecretSpec,
} from './protocol/secrets.js';
export { sign } from './protocol/sign.js';
export { type ParsedSignatureHeader, parseSignatureHeader } from './protocol/signature-header.js';
export {
  type ArchivedDelivery,
  type ArchivedRun,
  type ArchivedStep,
  type ArchiveEntry,
  type ArchiveMode,
  type CheckedInboxQuery,
  checkInboxQuery,
  INBOX_OUTCOMES,
  type InboxEvent,
  type InboxOutcome,
  type InboxPage,
  type InboxQuery,
  type InboxReader,
  type InboxSummary,
  type InboxTimelineEntry,
  inboxCursor,
  isWebhookArchive,
  MAX_INBOX_PAGE,
  outcomeAfter,
  type WebhookArchive,
} from './seams/archive.js';
export type { Ordering } from './seams/context.js';
export {
  CHANNELS,
  type DeliveryMessage,
  type DeliveryOutcome,
  type EnqueueMessage,
  type HandlerMessage,
  type JobMessage,
  type TransactionMessage,
} from './seams/diagnostics.js';
export { type BodyReader, type HandleInput, tenantFrom, type WebhookResponse } from './seams/handle-input.js';
export type { WebhooksLogger } from './seams/logger.js';
export {
  DEAD_LETTER_METHODS,
  type DeadLetter,
  type DeadLetterListOptions,
  type DeadLetterSource,
  isQueuedDelivery,
  isWebhookQueue,
  type QueuedDelivery,
  type QueuedRun,
  type WebhookQueue,
} from './seams/queue.js';
export { isFinalFailure, SchemaMismatchError, type StandardSchemaV1 } from './seams/schema.js';
export {
  type ClaimResult,
  DEFAULT_COMPLETED_TTL_MS,
  DEFAULT_IN_FLIGHT_TTL_MS,
  type IdempotencyStore,
  isCurrent,
  type OrderingResult,
} from './seams/store.js';
export {
  type BeginOptions,
  type BegunEvent,
  type CommitReadBack,
  type EventTransactions,
  isEventTransactions,
  type OpenEvent,
} from './seams/transactions.js';
export { MemoryArchive, type MemoryArchiveOptions } from './stores/memory-archive.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory-store.js';
export { assertKnownOptions, describeType } from './util/option-checks.js';
export {
  type ErrorContext,
  type ErrorHandler,
  type EventHandler,
  type HandlerContext,
  type HandlerOptions,
  type TransactionalHandlerContext,
  Webhooks,
  type WithObject,
} from './webhooks.js';
export type { WebhooksLike } from './webhooks-like.js';
