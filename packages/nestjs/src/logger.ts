import { Logger, type LoggerService } from '@nestjs/common';
import type { WebhooksLogger } from '@pixhook/core';

/**
 * pixhook's own lines (the `logger` option of `new Webhooks()` and `PixhookModule.forRoot()`) on a
 * Nest logger: the message with the fields as JSON after it, and the cause's stack as Nest's
 * `stack` argument. Without an argument, `new Logger('pixhook')`: the app's logger, `pixhook` as
 * the context.
 *
 * @param logger - a Nest `LoggerService`; @default new Logger('pixhook')
 * @example
 * PixhookModule.forRoot({ secret: process.env.SIGNING_SECRET, logger: nestLogger() })
 */
export function nestLogger(logger: LoggerService = new Logger('pixhook')): WebhooksLogger {
  if (typeof logger?.error !== 'function' || typeof logger.warn !== 'function') {
    throw new TypeError('pixhook: nestLogger(logger) needs a Nest LoggerService (with error and warn), or nothing.');
  }
  return {
    error(fields, message) {
      const { text, stack } = line(fields, message);
      if (stack === undefined) logger.error(text);
      else logger.error(text, stack);
    },
    warn(fields, message) {
      logger.warn(line(fields, message).text);
    },
  };
}

/** The message and the fields but `err` as one text; `err`'s stack (or text) apart. */
function line(fields: Record<string, unknown>, message: string): { text: string; stack: string | undefined } {
  const { err, ...rest } = fields;
  const stack = err === undefined ? undefined : err instanceof Error ? (err.stack ?? String(err)) : String(err);
  return { text: `${message} ${JSON.stringify(rest)}`, stack };
}
