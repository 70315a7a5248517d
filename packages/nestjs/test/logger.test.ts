// nestLogger(): pixhook's own lines on the Nest app's logger, in a real Nest application.
import 'reflect-metadata';
import { Injectable, type LoggerService, Module } from '@nestjs/common';
import { createTestEvent } from '@pixhook/core/testing';
import { nestLogger, OnWebhook, PixhookModule } from '@pixhook/nestjs';
import { delivery, SECRET } from '@pixhook/test-helpers/deliveries';
import { startNestApp } from '@pixhook/test-helpers/nest-adapters';
import { afterEach, describe, expect, it } from 'vitest';

/** The app's logger: keeps every call Nest's Logger makes to it. */
class RecordingLogger implements LoggerService {
  readonly calls: { level: string; args: unknown[] }[] = [];
  log(...args: unknown[]) {
    this.calls.push({ level: 'log', args });
  }
  error(...args: unknown[]) {
    this.calls.push({ level: 'error', args });
  }
  warn(...args: unknown[]) {
    this.calls.push({ level: 'warn', args });
  }
}

@Injectable()
class FailingHandlers {
  @OnWebhook('image.created')
  created() {
    throw new Error('the image index is down');
  }
}

@Module({
  imports: [PixhookModule.forRoot({ secret: SECRET, logger: nestLogger() })],
  providers: [FailingHandlers],
})
class AppModule {}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('nestLogger()', () => {
  it.each(['express', 'fastify'] as const)(
    'writes an unheard handler failure to the app logger on %s, with pixhook as context and the stack',
    async (platform) => {
      const logger = new RecordingLogger();
      const app = await startNestApp(AppModule, platform, { logger });
      closers.push(app.close);
      const event = createTestEvent('image.created', {}, { id: 'evt_nest_logger_1' });
      const answer = await app.send(delivery(event));
      expect(answer.status).toBe(500);
      const errors = logger.calls.filter((c) => c.level === 'error');
      expect(errors).toHaveLength(1);
      const [text, stack, context] = (errors[0]?.args ?? []) as [string, string, string];
      expect(text).toMatch(/^pixhook: HANDLER_FAILED: A handler for image\.created failed/);
      expect(JSON.parse(text.slice(text.indexOf(' {') + 1))).toMatchObject({
        code: 'HANDLER_FAILED',
        status: 500,
        eventType: 'image.created',
        eventId: 'evt_nest_logger_1',
      });
      expect(stack).toMatch(/^Error: the image index is down\n\s+at /);
      expect(context).toBe('pixhook');
    },
  );

  it('refuses something that is not a logger', () => {
    expect(() => nestLogger({} as LoggerService)).toThrow(/^pixhook: nestLogger\(logger\) needs a Nest LoggerService/);
  });
});
