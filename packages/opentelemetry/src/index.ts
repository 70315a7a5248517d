export {
  DURATION_BUCKETS,
  INSTRUMENTATION_NAME,
  INSTRUMENTATION_VERSION,
  PixhookInstrumentation,
  type PixhookInstrumentationConfig,
  type QueueCounts,
  type QueueWithCounts,
} from './instrumentation.js';
