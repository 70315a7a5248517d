// Child process: the load generator. `{ cmd: 'run', port, scheme, seconds, connections, maxRequests }`
// runs autocannon against 127.0.0.1:port with a freshly signed 1 KiB delivery (unique event id) on
// every request, bounded in time and count, and answers with its figures. `{ cmd: 'paced', port,
// scheme, rate, seconds, connections }` sends the same deliveries at a fixed pace instead, one every
// 1 ÷ rate s (see `paced`). `{ cmd: 'burst', … }` sends a fixed number of large deliveries at once
// (the memory scenario).
import http from 'node:http';
import autocannon from 'autocannon';
import { serve } from '../children.mjs';
import { bodyFrom, bodyTemplate, SCHEMES } from '../payloads.mjs';

const template = bodyTemplate(1024, 'ascii');
// Unique across runs of this process, so the idempotency store never sees an id twice.
let nextId = 1;

function run({ port, scheme, seconds, connections, maxRequests }) {
  const sign = SCHEMES[scheme];
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${port}`,
        connections,
        pipelining: 1,
        duration: seconds,
        maxOverallRequests: maxRequests,
        timeout: 10,
        requests: [
          {
            method: 'POST',
            path: '/webhooks',
            setupRequest(request) {
              const body = bodyFrom(template, nextId++);
              return { ...request, headers: sign(body), body };
            },
          },
        ],
      },
      (error, result) => {
        if (error) reject(error);
        else
          resolve({
            seconds: result.duration,
            requests: result.requests.total,
            rps: result.requests.total / result.duration,
            ok: result['2xx'],
            non2xx: result.non2xx,
            errors: result.errors,
            timeouts: result.timeouts,
            p50: result.latency.p50,
            p99: result.latency.p99,
          });
      },
    );
  });
}

/** The value at quantile `q` of sorted numbers (nearest rank); undefined when there are none. */
function quantile(sorted, q) {
  return sorted.length === 0 ? undefined : sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)];
}

/**
 * Deliveries at a fixed pace, `rate` per second for `seconds`: delivery i is sent at i ÷ rate s
 * from the start, whatever the earlier ones' fate (an open loop: a slow answer delays no later
 * delivery), on at most `connections` keep-alive connections; when all are busy a delivery waits
 * for one, and that wait counts in its time. Each delivery's time runs from its send (just before
 * the request is written, after signing) to the end of its answer, in fractions of a millisecond.
 * Answers req/s, p50/p99 of the 2xx answers in ms, the most deliveries in flight at once, how late
 * the sender itself ran (its timers, on a shared core) and the same counts as `run`.
 */
function paced({ port, scheme, rate, seconds, connections }) {
  const sign = SCHEMES[scheme];
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections, maxFreeSockets: connections });
  const total = Math.max(1, Math.round(rate * seconds));
  const interval = 1000 / rate;
  const times = [];
  const counts = { ok: 0, non2xx: 0, errors: 0, timeouts: 0 };
  let sent = 0;
  let finished = 0;
  let inFlight = 0;
  let maxInFlight = 0;
  let maxLateMs = 0;
  let lastEnd = 0;
  const t0 = performance.now();
  return new Promise((resolve) => {
    const finish = () => {
      inFlight--;
      finished++;
      lastEnd = performance.now();
      if (finished < total) return;
      agent.destroy();
      times.sort((a, b) => a - b);
      const secs = (lastEnd - t0) / 1000;
      resolve({
        seconds: secs,
        requests: total,
        rps: total / secs,
        ...counts,
        p50: quantile(times, 0.5),
        p99: quantile(times, 0.99),
        max: times.at(-1),
        maxInFlight,
        maxLateMs,
      });
    };
    const send = () => {
      const body = bodyFrom(template, nextId++);
      const headers = { ...sign(body), 'content-length': body.length };
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      const start = performance.now();
      // Once per delivery, whichever of its answer, error or timeout comes first.
      let settled = false;
      const settle = (outcome) => {
        if (settled) return;
        settled = true;
        if (outcome === 'ok') {
          counts.ok++;
          times.push(performance.now() - start);
        } else counts[outcome]++;
        finish();
      };
      const request = http.request(
        { host: '127.0.0.1', port, path: '/webhooks', method: 'POST', agent, headers, timeout: 10_000 },
        (response) => {
          response.resume();
          response.on('error', () => settle('errors'));
          response.on('end', () => settle(response.statusCode >= 200 && response.statusCode < 300 ? 'ok' : 'non2xx'));
        },
      );
      request.on('timeout', () => {
        settle('timeouts');
        request.destroy();
      });
      request.on('error', () => settle('errors'));
      request.end(body);
    };
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor((now - t0) / interval) + 1);
      while (sent < due) {
        maxLateMs = Math.max(maxLateMs, now - (t0 + sent * interval));
        sent++;
        send();
      }
      if (sent < total) setTimeout(tick, Math.max(0, t0 + sent * interval - performance.now()));
    };
    tick();
  });
}

function post(agent, port, body, headers) {
  return new Promise((resolve) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks',
        method: 'POST',
        agent,
        headers: { ...headers, 'content-length': body.length },
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode));
      },
    );
    request.on('error', (error) => resolve(error.code ?? 'error'));
    request.end(body);
  });
}

/** `count` deliveries of `bytes` each, all sent at once on their own connections; answers their statuses. */
async function burst({ port, count, bytes }) {
  const template = bodyTemplate(bytes, 'utf8');
  const agent = new http.Agent({ keepAlive: false, maxSockets: count });
  const bodies = Array.from({ length: count }, () => bodyFrom(template, nextId++));
  const statuses = await Promise.all(bodies.map((body) => post(agent, port, body, SCHEMES.pixhook(body))));
  agent.destroy();
  return { statuses };
}

serve(async (message) => {
  if (message.cmd === 'run') return run(message);
  if (message.cmd === 'paced') return paced(message);
  if (message.cmd === 'burst') return burst(message);
  throw new Error(`unknown command ${message.cmd}`);
});
process.send({ ready: true });
