// Webhook bodies of exact sizes, ASCII or UTF-8 with non-ASCII text, and the headers of each
// signing scheme the benchmarks compare. Bodies end in a newline: JSON.parse accepts it, but
// re-serialised JSON would lose it, so any adapter that re-serialised would fail the signature.
import { createHmac, randomUUID } from 'node:crypto';

/** The signing secret every scenario uses (pixhook, Stripe and Octokit take it as text). */
export const SECRET = 'whsec_bench_0123456789abcdefghijklmnopqrstuvwxyz';

/** The body sizes of the in-process verification scenario. */
export const SIZES = [
  { name: '1 KiB', bytes: 1024 },
  { name: '64 KiB', bytes: 64 * 1024 },
  { name: '1 MiB', bytes: 1024 * 1024 },
];

export const KINDS = ['ascii', 'utf8'];

const TEXT = {
  ascii: 'Sunset over the harbour, shot from the north pier at golden hour',
  utf8: 'Coucher de soleil sur le port – 港の夕焼け, Ünïcödé café 🌅 Đà Nẵng',
};

/** An event id of fixed length, so bodies built from one template all have the same size. */
export function eventId(n) {
  return `evt_${n.toString(36).padStart(20, '0')}`;
}

/**
 * A signed-body template of exactly `bytes` UTF-8 bytes: `{ prefix, suffix }` around the event id.
 * @param {number} bytes
 * @param {'ascii' | 'utf8'} kind
 */
export function bodyTemplate(bytes, kind) {
  const key = `${bytes}:${kind}`;
  if (!templates.has(key)) templates.set(key, buildTemplate(bytes, kind));
  return templates.get(key);
}

const templates = new Map();

function buildTemplate(bytes, kind) {
  const marker = eventId(0);
  const items = [];
  const envelope = {
    id: marker,
    type: 'image.created',
    created: 1_763_800_000,
    data: {
      object: {
        id: 'img_8TqKz2Lw',
        filename: kind === 'ascii' ? 'sunset-over-harbour.jpg' : 'coucher-de-soleil-港.jpg',
        content_type: 'image/jpeg',
        width: 1920,
        height: 1080,
        variants: items,
        note: '',
      },
    },
  };
  const size = () => Buffer.byteLength(`${JSON.stringify(envelope)}\n`);
  // Grown item by item on a running count: re-serialising the envelope each time is quadratic.
  let running = size();
  for (let i = 0; running < bytes - 250; i++) {
    const item = {
      id: `var_${String(i).padStart(6, '0')}`,
      width: 64 + (i % 1856),
      url: `https://images.example.com/img_8TqKz2Lw/${i}.webp`,
      caption: TEXT[kind],
      tags: ['harbour', 'sunset', kind === 'ascii' ? 'pier' : 'café'],
    };
    running += Buffer.byteLength(JSON.stringify(item)) + (items.length > 0 ? 1 : 0);
    items.push(item);
  }
  const missing = bytes - size();
  if (missing < 0) throw new Error(`bodyTemplate: cannot fit ${bytes} bytes`);
  envelope.data.object.note = 'x'.repeat(missing);
  const text = `${JSON.stringify(envelope)}\n`;
  if (Buffer.byteLength(text) !== bytes) throw new Error('bodyTemplate: size mismatch');
  const at = text.indexOf(marker);
  return { prefix: text.slice(0, at), suffix: text.slice(at + marker.length) };
}

/** One body from a template, with event id number `n`. */
export function bodyFrom(template, n) {
  return Buffer.from(template.prefix + eventId(n) + template.suffix);
}

export function unixNow() {
  return Math.floor(Date.now() / 1000);
}

function hmacHex(secret, ...parts) {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
}

/** The four headers of a pixhook delivery (the service's scheme: HMAC of `t.body`). */
export function pixhookHeaders(body, t = String(unixNow())) {
  return {
    'content-type': 'application/json',
    'x-service-event': 'image.created',
    'x-service-delivery': randomUUID(),
    'x-service-signature': `t=${t},v1=${hmacHex(SECRET, `${t}.`, body)}`,
  };
}

/** GitHub's scheme, as Octokit's middleware expects it: HMAC of the body alone. */
export function octokitHeaders(body) {
  return {
    'content-type': 'application/json',
    'x-github-event': 'issues',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': `sha256=${hmacHex(SECRET, body)}`,
  };
}

/** Headers for a scheme by name. */
export const SCHEMES = { pixhook: pixhookHeaders, octokit: octokitHeaders };
