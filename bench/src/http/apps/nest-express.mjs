// The NestJS servers on the Express platform: only Nest, its Express platform and @pixhook/nestjs are loaded in their process.
import { ExpressAdapter } from '@nestjs/platform-express';
import { startNest } from './nest.mjs';

/** Starts one variant (bare, pixhook) on 127.0.0.1 (a free port); answers its `{ server, close, handled }`. */
export function start(variant) {
  return startNest(variant, new ExpressAdapter());
}
