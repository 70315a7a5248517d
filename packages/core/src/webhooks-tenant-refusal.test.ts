/**
 * An unknown tenant's refusal does the work a wrong signature's does, so neither its answer nor its
 * time tells a stranger whether a tenant exists: the same bytes answered, one HMAC of the whole body
 * computed (with a throwaway key), one error made. Counted, not timed: the time itself is measured
 * by `pnpm bench` (bench/src/tenant, docs/benchmarks.md), where it is ~1.0× a wrong signature's.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Webhooks, type WebhookVerificationError } from './index.js';
import { createSignedRequest, createTestEvent } from './testing.js';

const SECRET = 'whsec_tenant_timing_acme_5e0c';
const WRONG = 'whsec_tenant_timing_wrong_93ab';
const crypto = process.getBuiltinModule('node:crypto');

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a secret per tenant: an unknown tenant is refused as a wrong signature is', () => {
  it('answers the same bytes after the same work: one HMAC over the body, one error', async () => {
    const webhooks = new Webhooks({ secret: async (tenant) => (tenant === 'acme' ? SECRET : undefined) });
    const heard: WebhookVerificationError[] = [];
    webhooks.onError((error) => void heard.push(error));
    let n = 0;
    const request = (secret: string, tenant: string) => {
      const event = createTestEvent('image.created', { id: 'img_1', note: 'x'.repeat(900) }, { id: `evt_t${++n}` });
      return { method: 'POST', ...createSignedRequest(event, { secret }), tenant };
    };
    // Both lookups cached first: what is compared is the verification, not the lookup.
    await webhooks.handle(request(WRONG, 'acme'));
    await webhooks.handle(request(SECRET, 'nobody'));
    // Signed before counting: signing is an HMAC too.
    const [wrongRequest, unknownRequest] = [request(WRONG, 'acme'), request(SECRET, 'nobody')];
    const hmacs = vi.spyOn(crypto, 'createHmac');
    const wrong = await webhooks.handle(wrongRequest);
    const afterWrong = hmacs.mock.calls.length;
    const unknown = await webhooks.handle(unknownRequest);
    expect(unknown).toEqual(wrong);
    expect(wrong.status).toBe(400);
    expect(afterWrong).toBe(1);
    expect(hmacs.mock.calls.length - afterWrong).toBe(1);
    // One error each, both SIGNATURE_MISMATCH; the unknown tenant's says why, in its cause only.
    expect(heard.slice(-2).map((error) => error.code)).toEqual(['SIGNATURE_MISMATCH', 'SIGNATURE_MISMATCH']);
    expect(String((heard.at(-1)?.cause as Error | undefined)?.message)).toMatch(/found no secret for this tenant/);
    expect(JSON.stringify(unknown)).not.toMatch(/tenant/);
  });
});
