export type { WebhooksLike } from '@pixhook/core';
export { createFetchHandler, type FetchHandler, type FetchHandlerOptions } from './create-fetch-handler.js';
