export {
  createFetchHandler,
  type FetchHandler,
  type FetchHandlerOptions,
  type WebhooksLike,
} from './create-fetch-handler.js';
