// The pipeline stays synchronous until something is asynchronous (issue 9): these pin that every
// shape it meets, synchronous or not, still gets the same answers, and that nothing it skips for
// speed skips a user's own code (a MemoryStore subclass, a spied method, a thenable).
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import {
  type ClaimResult,
  type IdempotencyStore,
  MemoryStore,
  Webhooks,
  type WebhooksOptions,
  type WebhookVerificationError,
} from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_fast_path_test_5d4e3f';

function setup(options: Partial<WebhooksOptions> = {}) {
  const webhooks = new Webhooks({ secret: SECRET, ...options });
  const errors: WebhookVerificationError[] = [];
  webhooks.onError((error) => void errors.push(error));
  return { webhooks, errors };
}

function signed() {
  const event = createTestEvent('image.created');
  return { event, ...createSignedRequest(event, { secret: SECRET }) };
}

const codeOf = (body: string) => (JSON.parse(body) as { error?: { code: string } }).error?.code;

/** A thenable that is not a Promise, settled by hand. */
function thenable<T>() {
  let settle: ((ok: boolean, value: unknown) => void) | undefined;
  const value = {
    // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise is the point.
    then(onFulfilled: (value: T) => unknown, onRejected: (reason: unknown) => unknown) {
      settle = (ok, v) => (ok ? onFulfilled(v as T) : onRejected(v));
    },
  };
  return {
    value,
    resolve: (v: T) => settle?.(true, v),
    reject: (reason: unknown) => settle?.(false, reason),
    started: () => settle !== undefined,
  };
}

describe('the synchronous fast path never skips the user’s own code', () => {
  it('a MemoryStore subclass that overrides claim, complete and release is called for every delivery', async () => {
    const calls: string[] = [];
    class AuditedStore extends MemoryStore {
      override async claim(id: string, token?: string): Promise<ClaimResult> {
        calls.push(`claim ${id}`);
        return super.claim(id, token);
      }
      override async complete(id: string, token?: string): Promise<void> {
        calls.push(`complete ${id}`);
        return super.complete(id, token);
      }
      override async release(id: string, token?: string): Promise<void> {
        calls.push(`release ${id}`);
        return super.release(id, token);
      }
    }
    const { webhooks } = setup({ store: new AuditedStore() });
    let fail = true;
    webhooks.on('image.created', () => {
      if (fail) throw new Error('first run fails');
    });
    const { event, body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(500);
    fail = false;
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    const again = await webhooks.handle({ headers, body });
    expect(again.body).toBe('{"received":true,"duplicate":true}');
    expect(calls).toEqual([
      `claim ${event.id}`,
      `release ${event.id}`,
      `claim ${event.id}`,
      `complete ${event.id}`,
      `claim ${event.id}`,
    ]);
  });

  it('a spy put on a MemoryStore after the Webhooks was made is called (a failing claim answers 503)', async () => {
    const store = new MemoryStore();
    const { webhooks, errors } = setup({ store });
    const ran: string[] = [];
    webhooks.on('image.created', (event) => void ran.push(event.id));
    const claim = vi.spyOn(store, 'claim').mockRejectedValueOnce(new Error('store down'));
    const first = signed();
    const res = await webhooks.handle({ headers: first.headers, body: first.body });
    expect(res.status).toBe(503);
    expect(codeOf(res.body)).toBe('STORE_UNAVAILABLE');
    expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
    expect(ran).toEqual([]);
    // The spy passes through now: the same delivery is processed, through the spied method.
    expect((await webhooks.handle({ headers: first.headers, body: first.body })).status).toBe(200);
    expect(claim).toHaveBeenCalledTimes(2);
    expect(ran).toEqual([first.event.id]);
  });

  it('a MemoryStore that is full answers 503 STORE_UNAVAILABLE on the fast path too, and runs nothing', async () => {
    const store = new MemoryStore({ maxEntries: 1 });
    const { webhooks, errors } = setup({ store });
    let release: (() => void) | undefined;
    const ran: string[] = [];
    webhooks.on('image.created', (event) => {
      ran.push(event.id);
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    const a = signed();
    const b = signed();
    const slow = webhooks.handle({ headers: a.headers, body: a.body });
    const res = await webhooks.handle({ headers: b.headers, body: b.body });
    expect(res.status).toBe(503);
    expect(codeOf(res.body)).toBe('STORE_UNAVAILABLE');
    expect(errors[0]?.cause).toBeInstanceOf(Error);
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toMatch(/MemoryStore is full/);
    release?.();
    expect((await slow).status).toBe(200);
    expect(ran).toEqual([a.event.id]);
  });
});

describe('stores, handlers and readers that answer synchronously or with thenables', () => {
  it('a store whose methods return plain values (no promises) works like an async one', async () => {
    const state = new Map<string, 'in-flight' | 'completed'>();
    const store: IdempotencyStore = {
      claim: ((id: string) => {
        const now = state.get(id);
        if (now) return now;
        state.set(id, 'in-flight');
        return 'claimed';
      }) as unknown as IdempotencyStore['claim'],
      complete: ((id: string) => void state.set(id, 'completed')) as unknown as IdempotencyStore['complete'],
      release: ((id: string) => void state.delete(id)) as unknown as IdempotencyStore['release'],
    };
    const { webhooks } = setup({ store });
    let runs = 0;
    webhooks.on('image.created', () => {
      runs++;
    });
    const { event, body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).body).toBe('{"received":true}');
    expect(state.get(event.id)).toBe('completed');
    expect((await webhooks.handle({ headers, body })).body).toBe('{"received":true,"duplicate":true}');
    expect(runs).toBe(1);
  });

  it('a store whose claim answers something else, synchronously, is 503 STORE_UNAVAILABLE', async () => {
    const store = {
      claim: () => 'yes',
      complete: async () => {},
      release: async () => {},
    } as unknown as IdempotencyStore;
    const { webhooks, errors } = setup({ store });
    webhooks.on('image.created', () => {});
    const { body, headers } = signed();
    const res = await webhooks.handle({ headers, body });
    expect(res.status).toBe(503);
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toMatch(/answered "yes"/);
  });

  it('a store whose claim returns a thenable that is not a Promise is waited for', async () => {
    const pending = thenable<ClaimResult>();
    const completed: string[] = [];
    const store: IdempotencyStore = {
      claim: () => pending.value as unknown as Promise<ClaimResult>,
      complete: async (id) => void completed.push(id),
      release: async () => {},
    };
    const { webhooks } = setup({ store });
    const ran: string[] = [];
    webhooks.on('image.created', (event) => void ran.push(event.id));
    const { event, body, headers } = signed();
    const answer = webhooks.handle({ headers, body });
    await vi.waitFor(() => expect(pending.started()).toBe(true), { timeout: 10_000 });
    expect(ran).toEqual([]);
    pending.resolve('claimed');
    expect((await answer).status).toBe(200);
    expect(ran).toEqual([event.id]);
    expect(completed).toEqual([event.id]);
  });

  it("a store's takeWarning() that throws is reported, and the claim it granted stands", async () => {
    const store = new MemoryStore();
    store.takeWarning = () => {
      throw new Error('warning broke');
    };
    const { webhooks, errors } = setup({ store });
    const ran: string[] = [];
    webhooks.on('image.created', (event) => void ran.push(event.id));
    const { event, body, headers } = signed();
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect(ran).toEqual([event.id]);
    expect(errors.map((e) => e.code)).toEqual(['STORE_UNAVAILABLE']);
    expect((errors[0]?.cause as Error | undefined)?.message).toBe('warning broke');
  });

  it('a handler that returns a thenable is waited for; one that rejects answers 500 and frees the event', async () => {
    const { webhooks } = setup();
    const pending = thenable<void>();
    let calls = 0;
    const after: string[] = [];
    webhooks.on('image.created', () => {
      calls++;
      return calls === 1 ? pending.value : undefined;
    });
    webhooks.onAny((event) => void after.push(event.id));
    const { event, body, headers } = signed();
    const answer = webhooks.handle({ headers, body });
    await vi.waitFor(() => expect(pending.started()).toBe(true), { timeout: 10_000 });
    expect(after).toEqual([]);
    pending.reject(new Error('async failure'));
    const res = await answer;
    expect(res.status).toBe(500);
    expect(codeOf(res.body)).toBe('HANDLER_FAILED');
    expect(after).toEqual([]);
    // Released: the retry runs both handlers.
    expect((await webhooks.handle({ headers, body })).status).toBe(200);
    expect(after).toEqual([event.id]);
  });

  it('a handler whose `then` getter throws counts as that handler failing', async () => {
    const { webhooks } = setup();
    webhooks.on('image.created', () => ({
      // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is the point.
      get then() {
        throw new Error('hostile then');
      },
    }));
    const { body, headers } = signed();
    const res = await webhooks.handle({ headers, body });
    expect(res.status).toBe(500);
    expect(codeOf(res.body)).toBe('HANDLER_FAILED');
  });

  it('a body reader may hand the body over directly, or throw instead of rejecting', async () => {
    const { webhooks } = setup();
    const ran: string[] = [];
    webhooks.on('image.created', (event) => void ran.push(event.id));
    const { event, body, headers } = signed();
    expect((await webhooks.handle({ headers, body: () => body })).status).toBe(200);
    expect(ran).toEqual([event.id]);
    const thrown = await webhooks.handle({
      headers,
      body: () => {
        throw new Error('socket gone');
      },
    });
    expect(thrown.status).toBe(400);
    expect(codeOf(thrown.body)).toBe('BODY_UNREADABLE');
    const tooLarge = await webhooks.handle({
      headers,
      body: () => {
        throw Object.assign(new Error('too large'), { statusCode: 413 });
      },
    });
    expect(tooLarge.status).toBe(413);
  });

  it('a synchronous run answers with a promise, never by throwing, even when everything throws', async () => {
    const { webhooks } = setup();
    webhooks.on('image.created', () => {
      throw new Error('sync failure');
    });
    const { body, headers } = signed();
    const answer = webhooks.handle({ headers, body });
    expect(answer).toBeInstanceOf(Promise);
    expect((await answer).status).toBe(500);
    const hostile = new Proxy(
      {},
      {
        get() {
          throw new Error('hostile input');
        },
      },
    );
    const refused = webhooks.handle(hostile as never);
    expect(refused).toBeInstanceOf(Promise);
    expect((await refused).status).toBe(500);
  });
});

describe('handler deadlines share one timer per duration', () => {
  it('each of many concurrent runs gets its own deadline: the slow ones time out, the quick ones answer 200', async () => {
    // Far apart, so a busy machine's delays cannot blur which deadline ended which run.
    const fast = setup({ handlerTimeoutMs: 300 });
    const slow = setup({ handlerTimeoutMs: 2_000 });
    const gates = new Map<string, () => void>();
    for (const { webhooks } of [fast, slow]) {
      webhooks.on(
        'image.created',
        (event) =>
          new Promise<void>((resolve) => {
            gates.set(event.id, resolve);
          }),
      );
    }
    const deliveries = Array.from({ length: 6 }, () => signed());
    const started = Date.now();
    const answers = deliveries.map((d, i) =>
      (i % 2 === 0 ? fast : slow).webhooks.handle({ headers: d.headers, body: d.body }),
    );
    // Deliveries 0 and 1 finish at once; the others never do (until the end of the test).
    await vi.waitFor(() => expect(gates.size).toBe(6), { timeout: 10_000 });
    gates.get(deliveries[0]?.event.id as string)?.();
    gates.get(deliveries[1]?.event.id as string)?.();
    const results = await Promise.all(answers.map((a) => a.then((r) => ({ r, at: Date.now() - started }))));
    expect(results.map(({ r }) => r.status)).toEqual([200, 200, 503, 503, 503, 503]);
    for (const i of [2, 4]) {
      expect(codeOf(results[i]?.r.body as string)).toBe('HANDLER_TIMEOUT');
      expect(results[i]?.at).toBeGreaterThanOrEqual(295);
      // Its own deadline, not the slow runs' (a timer shared wrongly would end it at 2 s).
      expect(results[i]?.at).toBeLessThan(1_900);
    }
    for (const i of [3, 5]) expect(results[i]?.at).toBeGreaterThanOrEqual(1_995);
    for (const open of gates.values()) open();
  });

  it('a pending deadline does not keep the process alive by itself', () => {
    // A process whose only work left is a body that never comes exits at once rather than after
    // bodyTimeoutMs: the request's socket keeps a server alive, not pixhook's deadline.
    const core = fileURLToPath(new URL('../dist/index.js', import.meta.url));
    const script = `
      const { Webhooks } = await import(${JSON.stringify(core)});
      const webhooks = new Webhooks({ secret: 'whsec_x', bodyTimeoutMs: 20000, handlerTimeoutMs: 20000 });
      void webhooks.handle({ headers: {}, body: () => new Promise(() => {}) });
    `;
    const started = Date.now();
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
