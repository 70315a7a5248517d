/**
 * The plugin goes through fastify-plugin: it has a name, refuses Fastify 4 with a clear error, and
 * stays encapsulated (its raw-body parser and error handler stay inside it, the registration prefix
 * applies, the app's other routes keep parsing JSON).
 */
import { Webhooks } from '@pixhook/core';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import pixhook from '@pixhook/fastify';
import Fastify, { type FastifyInstance } from 'fastify';
import Fastify4 from 'fastify4';
import { afterEach, describe, expect, it } from 'vitest';

const SECRET = 'whsec_plugin_registration';
const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function app(): FastifyInstance {
  const instance = Fastify();
  apps.push(instance);
  return instance;
}

function recording() {
  const runs: string[] = [];
  const webhooks = new Webhooks({ secret: SECRET }).onAny((event) => void runs.push(event.id));
  return { webhooks, runs };
}

function post(instance: FastifyInstance, url: string) {
  const { body, headers } = createSignedRequest(createTestEvent('image.created'), { secret: SECRET });
  return instance.inject({ method: 'POST', url, headers, payload: body });
}

describe('@pixhook/fastify registration', () => {
  it('refuses Fastify 4 with a clear error naming the plugin and the version it needs', async () => {
    const old = Fastify4();
    apps.push(old);
    old.register(pixhook as never, { webhooks: recording().webhooks });
    await expect(old.ready()).rejects.toThrow(/@pixhook\/fastify.*5\.x.*4\.29\.1/);
  });

  it('is named @pixhook/fastify', async () => {
    const fastify = app();
    await fastify.register(pixhook, { webhooks: recording().webhooks });
    expect(fastify.hasPlugin('@pixhook/fastify')).toBe(true);
    expect(fastify.printPlugins()).toContain('@pixhook/fastify');
  });

  it('can be registered twice under different prefixes', async () => {
    const { webhooks, runs } = recording();
    const fastify = app();
    await fastify.register(pixhook, { webhooks, prefix: '/a' });
    await fastify.register(pixhook, { webhooks, prefix: '/b' });
    expect((await post(fastify, '/a/webhooks')).statusCode).toBe(200);
    expect((await post(fastify, '/b/webhooks')).statusCode).toBe(200);
    expect(runs).toHaveLength(2);
  });

  it("keeps its parser and error handler inside: the app's other routes parse JSON and keep Fastify's errors", async () => {
    const { webhooks } = recording();
    const fastify = app();
    fastify.post('/before', async (request) => ({ body: request.body }));
    await fastify.register(pixhook, { webhooks });
    fastify.post('/after', async (request) => ({ body: request.body }));
    for (const url of ['/before', '/after']) {
      const res = await fastify.inject({ method: 'POST', url, payload: { name: 'x', n: 2 } });
      expect(res.json()).toEqual({ body: { name: 'x', n: 2 } });
      const broken = await fastify.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/json' },
        payload: '{"name":',
      });
      expect(broken.statusCode).toBe(400);
      const unknownType = await fastify.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-unknown' },
        payload: 'x',
      });
      expect(unknownType.statusCode).toBe(415);
    }
    expect(fastify.hasContentTypeParser('application/x-unknown')).toBe(false);
  });
});
