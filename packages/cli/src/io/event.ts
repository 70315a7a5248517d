import { EVENT_TYPES, type WebhookEvent } from '@pixhook/core';
import { createTestEvent } from '@pixhook/core/testing';
import { safeJson } from './escape.js';
import { readJsonObject } from './input.js';
import { pc } from './output.js';

/** Options shared by `send` and `simulate` to build the event. */
export interface EventOptions {
  type: string;
  data?: string;
  eventId?: string;
  /** The envelope's `created`, Unix seconds; @default now */
  created?: number;
}

/** An envelope as the service would build it: a realistic sample `data.object` unless `--data` is given. */
export async function buildEvent(options: EventOptions): Promise<WebhookEvent<string, object>> {
  const object = options.data === undefined ? undefined : await readJsonObject(options.data, 'data.object');
  if (!(EVENT_TYPES as readonly string[]).includes(options.type)) {
    process.stderr.write(
      pc.yellow(
        `pixhook: ${safeJson(options.type)} is not one of the spec's event types (${EVENT_TYPES.join(', ')}); a receiver should still answer 200.\n`,
      ),
    );
  }
  return createTestEvent(options.type, object, {
    ...(options.eventId === undefined ? {} : { id: options.eventId }),
    ...(options.created === undefined ? {} : { created: options.created }),
  });
}
