export {
  OnAnyWebhook,
  OnWebhook,
  OnWebhookError,
  type WebhookErrorMethod,
  type WebhookEventOf,
  type WebhookHandlerContext,
  type WebhookMethod,
} from './decorators.js';
export { nestLogger } from './logger.js';
export { PIXHOOK_MODULE_OPTIONS, type PixhookModuleAsyncOptions } from './module-definition.js';
export type { PixhookModuleOptions, PixhookRouteOptions } from './options.js';
export { PixhookModule } from './pixhook.module.js';
