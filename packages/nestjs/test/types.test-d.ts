// What editors check in a Nest app: a decorated method's event parameter must fit the decorator's
// event types, and the module's options are those of new Webhooks() plus `path`.
import { Injectable } from '@nestjs/common';
import type { AnyEvent, ErrorContext, WebhookVerificationError } from '@pixhook/core';
import {
  OnAnyWebhook,
  OnWebhook,
  OnWebhookError,
  PixhookModule,
  type PixhookModuleOptions,
  type WebhookEventOf,
  type WebhookHandlerContext,
} from '@pixhook/nestjs';
import { describe, expectTypeOf, it } from 'vitest';

describe('@OnWebhook() types', () => {
  it('narrows the event to the decorated types', () => {
    expectTypeOf<WebhookEventOf<'image.created'>['type']>().toEqualTypeOf<'image.created'>();
    expectTypeOf<WebhookEventOf<'quota.warned' | 'quota.exceeded'>['type']>().toEqualTypeOf<
      'quota.warned' | 'quota.exceeded'
    >();
  });

  it('accepts methods whose parameters fit, and refuses those that do not', () => {
    @Injectable()
    class Handlers {
      @OnWebhook('image.created')
      created(event: WebhookEventOf<'image.created'>, context: WebhookHandlerContext) {
        expectTypeOf(event.data.object).toEqualTypeOf<Record<string, unknown>>();
        expectTypeOf(context.deliveryId).toBeString();
      }

      @OnWebhook(['quota.warned', 'quota.exceeded'])
      quota(event: WebhookEventOf<'quota.warned' | 'quota.exceeded'>) {
        return event.type;
      }

      @OnWebhook('image.created')
      noParameters() {}

      @OnWebhook('image.deleted')
      anyEventIsFine(_event: AnyEvent) {}

      // @ts-expect-error an image.deleted event is not what @OnWebhook('image.created') delivers
      @OnWebhook('image.created')
      wrongType(_event: WebhookEventOf<'image.deleted'>) {}

      // @ts-expect-error one of the two types is not what the method takes
      @OnWebhook(['quota.warned', 'image.created'])
      tooNarrow(_event: WebhookEventOf<'quota.warned'>) {}

      @OnAnyWebhook()
      any(_event: AnyEvent) {}

      // @ts-expect-error @OnAnyWebhook() delivers every type, not only image.created
      @OnAnyWebhook()
      anyTooNarrow(_event: WebhookEventOf<'image.created'>) {}

      @OnWebhookError()
      failed(_error: WebhookVerificationError, _context: ErrorContext) {}

      // @ts-expect-error an error listener takes the error first
      @OnWebhookError()
      failedWrong(_error: string) {}
    }
    expectTypeOf<Handlers>().toHaveProperty('created');
  });

  it('refuses type names it does not know', () => {
    // @ts-expect-error a typo is caught by the editor
    OnWebhook('image.craeted');
  });
});

describe('PixhookModule options', () => {
  it('takes the options of new Webhooks() and path, or a webhooks instance', () => {
    expectTypeOf(PixhookModule.forRoot).toBeCallableWith({ secret: 's', path: '/hooks', tolerance: 60 });
    expectTypeOf<{ secret: string; maxBodyBytes: number }>().toExtend<PixhookModuleOptions>();
    // @ts-expect-error a secret is required
    PixhookModule.forRoot({ path: '/hooks' });
    PixhookModule.forRootAsync({ useFactory: () => ({ secret: 's' }) });
    // @ts-expect-error the factory must give the options
    PixhookModule.forRootAsync({ useFactory: () => ({ path: 1 }) });
  });
});
