export { type AttemptOutcome, DEFAULT_MAX_ANSWER_BYTES, type DeliveryRequest, deliver } from './deliver.js';
export { type DiagnoseInput, type Diagnosis, type DiagnosisStep, diagnoseSignature } from './diagnose.js';
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
