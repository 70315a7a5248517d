// Child process: what a schema adds per delivery. `webhooks.handle({ method, headers, body })` with
// one handler registered as `on('image.created', handler)` (the baseline), as `on('image.created',
// { schema }, handler)` with a zod 4 schema, and with a valibot 1 schema of the same shape: the whole
// `data.object` of the 1 KiB delivery of the HTTP rows (its id, file name, type, sizes and its
// variants, each with its tags). One `Webhooks` (MemoryStore) per candidate; every call a new event id.
import { MemoryStore, Webhooks } from '@pixhook/core';
import * as v from 'valibot';
import { z } from 'zod';
import { serve } from '../children.mjs';
import { measure } from '../inprocess.mjs';
import { bodyFrom, bodyTemplate, pixhookHeaders, SECRET } from '../payloads.mjs';

const template = bodyTemplate(1024, 'ascii');
let nextId = 1;

const zodSchema = z.object({
  id: z.string(),
  filename: z.string(),
  content_type: z.string(),
  width: z.number().int(),
  height: z.number().int(),
  variants: z.array(
    z.object({
      id: z.string(),
      width: z.number().int(),
      url: z.string(),
      caption: z.string(),
      tags: z.array(z.string()),
    }),
  ),
  note: z.string(),
});

const valibotSchema = v.object({
  id: v.string(),
  filename: v.string(),
  content_type: v.string(),
  width: v.pipe(v.number(), v.integer()),
  height: v.pipe(v.number(), v.integer()),
  variants: v.array(
    v.object({
      id: v.string(),
      width: v.pipe(v.number(), v.integer()),
      url: v.string(),
      caption: v.string(),
      tags: v.array(v.string()),
    }),
  ),
  note: v.string(),
});

/** One `Webhooks` with one counting handler, registered with `options` (a schema) or without. */
function server(options) {
  const state = { handled: 0, widths: 0, reported: [] };
  const webhooks = new Webhooks({ secret: SECRET, store: new MemoryStore() });
  const handler = (event) => {
    state.handled++;
    state.widths += event.data.object.width;
  };
  if (options) webhooks.on('image.created', options, handler);
  else webhooks.on('image.created', handler);
  webhooks.onError((error) => {
    state.reported.push(error.code);
  });
  return { webhooks, state };
}

/** A signed delivery with a new event id; `broken` makes `data.object.width` a string (signed as such). */
function delivery(broken = false) {
  let body = bodyFrom(template, nextId++);
  if (broken) body = Buffer.from(body.toString().replace('"width":1920', '"width":"1920"'));
  return { method: 'POST', headers: pixhookHeaders(body), body };
}

function candidate(id, label, options) {
  const { webhooks, state } = server(options);
  return {
    id,
    label,
    webhooks,
    state,
    prepare(n) {
      state.before = state.handled;
      return Array.from({ length: n }, () => delivery());
    },
    run: (input) => webhooks.handle(input),
    check(answers, n) {
      const bad = answers.filter((answer) => answer.status !== 200).length;
      if (bad > 0 || state.handled - state.before !== n || state.reported.length > 0) {
        throw new Error(
          `${id}: ${n} calls, ${bad} not 200, handler ran ${state.handled - state.before} times${state.reported.length > 0 ? `, reported ${[...new Set(state.reported)].join(', ')}` : ''}`,
        );
      }
    },
  };
}

const CANDIDATES = [
  candidate('none', "on('image.created', handler): no schema", undefined),
  candidate('zod', "on('image.created', { schema }, handler): zod 4", { schema: zodSchema }),
  candidate('valibot', "on('image.created', { schema }, handler): valibot 1", { schema: valibotSchema }),
];

/**
 * Checks each candidate once: a delivery answers 200 and runs the handler; an event whose width is
 * a string answers 200 too, and runs it only without a schema (with one: SCHEMA_MISMATCH reported).
 */
async function checkOnce(c) {
  const { state } = c;
  const before = state.handled;
  const good = await c.webhooks.handle(delivery());
  const ranGood = state.handled - before;
  const broken = await c.webhooks.handle(delivery(true));
  const ranBroken = state.handled - before - ranGood;
  const expected = c.id === 'none' ? [] : ['SCHEMA_MISMATCH'];
  if (
    good.status !== 200 ||
    ranGood !== 1 ||
    broken.status !== 200 ||
    ranBroken !== (c.id === 'none' ? 1 : 0) ||
    state.reported.join() !== expected.join()
  ) {
    throw new Error(
      `${c.id}: answered ${good.status} (handler ran ${ranGood} times) to a good event and ${broken.status} (ran ${ranBroken} times, reported ${state.reported.join(', ') || 'nothing'}) to one that fails the schema`,
    );
  }
  state.reported.length = 0;
}

async function bench({ rounds, minCpuTimeMs, warmCpuTimeMs }) {
  for (const c of CANDIDATES) await checkOnce(c);
  const run = await measure(CANDIDATES, { rounds, minCpuTimeMs, warmCpuTimeMs, name: 'schema' });
  return { candidates: CANDIDATES.map(({ id, label }) => ({ id, label })), calls: nextId - 1, ...run };
}

serve(bench);
process.send({ ready: true });
