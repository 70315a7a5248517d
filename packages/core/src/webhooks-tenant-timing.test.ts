/**
 * An unknown tenant's refusal costs what a wrong signature's does: its 400 must not tell a stranger,
 * by its time, whether a tenant exists. Measured on the process's CPU clock (another process's load
 * does not count), the two interleaved in rounds, the fastest round of each compared. It built three
 * errors per refusal where a wrong signature builds one, ~1.5× the CPU of a wrong signature at 1 KiB
 * (bench/src/tenant: +10 µs); now one, ~1.0×.
 */
import { describe, expect, it } from 'vitest';
import { Webhooks } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_tenant_timing_acme_5e0c';
const WRONG = 'whsec_tenant_timing_wrong_93ab';

/** A 1 KiB event, as the bench sends. */
const OBJECT = { id: 'img_timing', note: 'x'.repeat(900) };

function cpuNs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) * 1000;
}

describe('a secret per tenant: refusal times', () => {
  it('refuses an unknown tenant in about the CPU time of a wrong signature', async () => {
    const webhooks = new Webhooks({ secret: async (tenant) => (tenant === 'acme' ? SECRET : undefined) });
    const heard: string[] = [];
    webhooks.onError((error) => {
      heard.push(error.code);
    });
    let n = 0;
    const request = (secret: string, tenant: string) => {
      const event = createTestEvent('image.created', OBJECT, { id: `evt_timing_${++n}` });
      return { method: 'POST', ...createSignedRequest(event, { secret }), tenant };
    };
    // Both answers are the same bytes.
    const wrong = await webhooks.handle(request(WRONG, 'acme'));
    const unknown = await webhooks.handle(request(SECRET, 'nobody'));
    expect(unknown).toEqual(wrong);
    expect(wrong.status).toBe(400);

    const BATCH = 400;
    const time = async (secret: string, tenant: string): Promise<number> => {
      const inputs = Array.from({ length: BATCH }, () => request(secret, tenant));
      const start = cpuNs();
      for (const input of inputs) await webhooks.handle(input);
      return (cpuNs() - start) / BATCH;
    };
    // Warm-up, then the fastest of interleaved rounds: noise only ever adds time.
    await time(WRONG, 'acme');
    await time(SECRET, 'nobody');
    let fastestWrong = Number.POSITIVE_INFINITY;
    let fastestUnknown = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 9; round++) {
      const first = round % 2 === 0;
      const a = await time(first ? WRONG : SECRET, first ? 'acme' : 'nobody');
      const b = await time(first ? SECRET : WRONG, first ? 'nobody' : 'acme');
      fastestWrong = Math.min(fastestWrong, first ? a : b);
      fastestUnknown = Math.min(fastestUnknown, first ? b : a);
    }
    expect(heard.every((code) => code === 'SIGNATURE_MISMATCH')).toBe(true);
    expect(heard.length).toBe(2 + (2 + 2 * 9) * BATCH);
    const ratio = fastestUnknown / fastestWrong;
    expect(
      ratio,
      `unknown tenant ${Math.round(fastestUnknown)} ns, wrong signature ${Math.round(fastestWrong)} ns`,
    ).toBeLessThan(1.25);
  }, 120_000);
});
