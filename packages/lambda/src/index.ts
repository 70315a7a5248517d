export type { WebhooksLike } from '@pixhook/core';
export { createLambdaHandler, type LambdaHandlerOptions } from './create-lambda-handler.js';
export type {
  LambdaAlbResult,
  LambdaHandler,
  LambdaHttpEvent,
  LambdaHttpResult,
  LambdaProxyResult,
  LambdaRequest,
} from './types.js';
