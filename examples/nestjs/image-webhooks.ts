import { Injectable, Logger } from '@nestjs/common';
import type { AnyEvent, WebhookVerificationError } from '@pixhook/core';
import {
  OnAnyWebhook,
  OnWebhook,
  OnWebhookError,
  type WebhookEventOf,
  type WebhookHandlerContext,
} from '@pixhook/nestjs';
import { ImagesService } from './images.service.js';

/** An ordinary provider: its decorated methods run for verified deliveries, once per event. */
@Injectable()
export class ImageWebhooks {
  readonly #log = new Logger(ImageWebhooks.name);

  constructor(private readonly images: ImagesService) {}

  @OnWebhook('image.created')
  async created(event: WebhookEventOf<'image.created'>, context: WebhookHandlerContext) {
    // Throwing here answers 500 HANDLER_FAILED: the service retries, and this runs again.
    await this.images.index(String(event.data.object.id), event.data.object);
    this.#log.log(`indexed ${String(event.data.object.id)} (delivery ${context.deliveryId})`);
  }

  @OnWebhook('image.deleted')
  async deleted(event: WebhookEventOf<'image.deleted'>) {
    await this.images.remove(String(event.data.object.id));
  }

  @OnWebhook(['quota.warned', 'quota.exceeded'])
  quota(event: WebhookEventOf<'quota.warned' | 'quota.exceeded'>) {
    this.#log.warn(`${event.type}: ${JSON.stringify(event.data.object)}`);
  }

  @OnAnyWebhook()
  seen(event: AnyEvent) {
    this.#log.debug(`${event.type} ${event.id}`);
  }

  @OnWebhookError()
  rejected(error: WebhookVerificationError) {
    // Forgeries, replays, handler failures; for HANDLER_FAILED the cause is your method's own error.
    this.#log.warn(`webhook ${error.code}: ${error.message}`);
    if (error.cause) this.#log.error(error.cause);
  }
}
