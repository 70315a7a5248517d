// examples/nestjs is the app the README shows: booted here as main.ts boots it (the secret from
// the environment through ConfigService), sent a signed delivery, a duplicate and a forgery.
import 'reflect-metadata';
import { createTestEvent } from '@pixhook/core/testing';
import { delivery, errorCode, SECRET } from '@pixhook/test-helpers/deliveries';
import { startNestApp } from '@pixhook/test-helpers/nest-adapters';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AppModule } from '../../../examples/nestjs/app.module.js';
import { ImagesService } from '../../../examples/nestjs/images.service.js';

const running: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((app) => app.close()));
  vi.unstubAllEnvs();
});

describe.each(['express', 'fastify'] as const)('examples/nestjs on %s', (platform) => {
  it('indexes a signed image.created once, removes on image.deleted, and refuses a forgery', async () => {
    vi.stubEnv('SIGNING_SECRET', SECRET);
    const started = await startNestApp(AppModule, platform);
    running.push(started);
    const images = started.app.get(ImagesService);

    const created = delivery(createTestEvent('image.created', { id: 'img_42', url: 'https://img.example/42.png' }));
    expect((await started.send(created)).status).toBe(200);
    expect((await started.send(created)).status).toBe(200);
    expect([...images.indexed.keys()]).toEqual(['img_42']);

    expect((await started.send(delivery(createTestEvent('image.deleted', { id: 'img_42' })))).status).toBe(200);
    expect([...images.removed]).toEqual(['img_42']);

    const forged = await started.send(
      delivery(createTestEvent('image.created', { id: 'img_7' }), { secret: 'whsec_x' }),
    );
    expect(forged.status).toBe(400);
    expect(errorCode(forged.json)).toBe('SIGNATURE_MISMATCH');
    expect(images.indexed.has('img_7')).toBe(false);
  });

  it('does not start without SIGNING_SECRET', async () => {
    vi.stubEnv('SIGNING_SECRET', undefined);
    await expect(startNestApp(AppModule, platform)).rejects.toThrow(/SIGNING_SECRET/);
  });
});
