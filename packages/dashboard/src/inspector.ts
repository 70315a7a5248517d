import type { IncomingMessage, ServerResponse } from 'node:http';
import { diagnoseSignature, diagnosesCode, errorCode, headersFromRaw } from '@pixhook/cli';
import { type AnyEvent, Webhooks } from '@pixhook/core';
import { nodeBodyReader } from '@pixhook/core/node';
import type { DiagnosisView, InspectedDelivery } from './protocol.js';
import type { DashboardState } from './state.js';

interface Received {
  event?: AnyEvent;
  bytes?: Uint8Array;
}

/**
 * The dashboard as the receiver, as `pixhook listen` is: every request to `/inspect…` is answered
 * by core's `Webhooks` with the endpoint's secret (de-duplication by event id included) and listed
 * with its verdict; a request that fails verification also gets `pixhook verify`'s diagnosis.
 */
export function createInspector(state: DashboardState) {
  let current: { secret: string; webhooks: Webhooks<never, Received> } | undefined;

  /** One `Webhooks` per secret: a new secret starts with a new de-duplication memory. */
  function webhooksFor(secret: string): Webhooks<never, Received> {
    if (current?.secret !== secret) {
      const webhooks = new Webhooks<never, Received>({ secret });
      webhooks.onAny((event, { request }) => {
        request.event = event;
      });
      current = { secret, webhooks };
    }
    return current.webhooks;
  }

  return async function inspect(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const secret = state.secret;
    const received: Received = {};
    const answer = secret
      ? await webhooksFor(secret).handle({
          method: req.method,
          headers: req.headers,
          // Core reads the body (with its size limit); the inspector keeps the bytes it read.
          body: async (limit, timeoutMs) => {
            const bytes = await nodeBodyReader(req, undefined, '')(limit, timeoutMs);
            received.bytes = typeof bytes === 'string' ? Buffer.from(bytes) : bytes;
            return bytes;
          },
          request: received,
        })
      : noSecretYet();
    res.writeHead(answer.status, answer.headers).end(answer.body);
    if (!secret) req.resume();
    state.addInspected(describe(state, req, received, answer, secret));
  };
}

function noSecretYet() {
  return {
    status: 503,
    headers: { 'content-type': 'application/json; charset=utf-8' },
    body: JSON.stringify({
      error: { code: 'NO_SECRET', message: 'Set the signing secret on the dashboard first: it verifies with it.' },
    }),
  };
}

function describe(
  state: DashboardState,
  req: IncomingMessage,
  received: Received,
  answer: { status: number; headers: Record<string, string>; body: string },
  secret: string | undefined,
): InspectedDelivery {
  const code = errorCode(answer.body);
  const message = code ? (JSON.parse(answer.body) as { error: { message?: string } }).error.message : undefined;
  const bytes = received.bytes ?? new Uint8Array();
  const signature = req.headers['x-service-signature'];
  const diagnosis =
    secret && code && diagnosesCode(code)
      ? diagnose(secret, Array.isArray(signature) ? signature.join(', ') : (signature ?? ''), bytes)
      : undefined;
  return {
    id: state.newId('i'),
    time: new Date().toISOString(),
    method: req.method ?? '',
    path: req.url ?? '',
    headers: headersFromRaw(req.rawHeaders),
    body: Buffer.from(bytes).toString('utf8'),
    bodyBytes: bytes.byteLength,
    verdict: answer.status !== 200 ? 'rejected' : received.event ? 'verified' : 'duplicate',
    answer,
    ...(code ? { code } : {}),
    ...(message === undefined ? {} : { message }),
    ...(received.event ? { event: { id: received.event.id, type: received.event.type } } : {}),
    ...(diagnosis ? { diagnosis } : {}),
  };
}

function diagnose(secret: string, header: string, body: Uint8Array): DiagnosisView {
  const { step, code, message, signatureMatches, timestamp, causes } = diagnoseSignature({ secret, header, body });
  return {
    ...(step ? { step } : {}),
    ...(code ? { code } : {}),
    ...(message ? { message } : {}),
    ...(signatureMatches === undefined ? {} : { signatureMatches }),
    ...(timestamp ? { timestamp } : {}),
    causes: causes.map(({ id, confirmed, text }) => ({ id, confirmed, text })),
  };
}
