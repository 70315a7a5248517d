import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { createInterface } from 'node:readline';
import { createSignedRequest, createTestEvent } from '@pixhook/core/testing';
import { ensureBuilt, run, SECRET, start } from '@pixhook/test-helpers/cli';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';

// What a terminal acts on instead of showing: C0 but the line feed, DEL, C1 (0x9b is CSI), bidi controls.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** POSTs with a raw socket, so header values reach the receiver byte for byte (one byte per character). */
function post(url: string, headers: Record<string, string>, body: string): Promise<number> {
  const { hostname, port, pathname } = new URL(url);
  const head = Object.entries({ host: `${hostname}:${port}`, ...headers, 'content-length': Buffer.byteLength(body) })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return new Promise((resolve, reject) => {
    let answer = '';
    const socket = connect(Number(port), hostname, () => {
      socket.write(Buffer.from(`POST ${pathname} HTTP/1.1\r\n${head}connection: close\r\n\r\n`, 'latin1'));
      socket.end(body);
    });
    socket.setEncoding('latin1').on('data', (chunk: string) => {
      answer += chunk;
    });
    socket.on('error', reject).on('close', () => resolve(Number(answer.split(' ')[1])));
  });
}

/** A server that is not a pixhook receiver: it answers whatever the test gives it. */
function answering(status: number, contentType: string, body: string): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume().on('end', () => res.writeHead(status, { 'content-type': contentType }).end(body));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

function urlOf(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;
}

beforeAll(() => ensureBuilt());

describe('nothing from a request or an answer reaches the terminal raw', () => {
  const servers: Server[] = [];
  const children: ReturnType<typeof start>[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  afterAll(() => {
    for (const server of servers) server.close();
  });

  test('listen: a hostile unsigned header and a signed body with escape sequences are printed escaped', async () => {
    const [text, json] = [start(['listen', '--port', '0']), start(['listen', '--port', '0', '--json'])];
    children.push(text, json);
    const textLines = createInterface({ input: text.stdout })[Symbol.asyncIterator]();
    const jsonLines = createInterface({ input: json.stdout })[Symbol.asyncIterator]();
    const textUrl = `${/http:\/\/[\d.:]+/.exec((await textLines.next()).value as string)?.[0]}/webhooks`;
    const jsonUrl = `${JSON.parse((await jsonLines.next()).value as string).listening}/webhooks`;

    // Node accepts bytes 0x80-0xff in header values (read as latin1): 0x9b is a one-byte CSI.
    const hostile = {
      'content-type': 'application/json',
      'x-service-event': 'image.created',
      'x-service-delivery': 'd\x9b2J\x9b31mred',
      'x-service-signature': 'nope\x9b2J',
    };
    // A signed body may carry any character, escaped in its JSON.
    const event = createTestEvent('image.created', { note: 'csi \u009b31m, bidi \u202eevil' }, { id: 'evt_\u001b[2J' });
    const signed = createSignedRequest(event, { secret: SECRET, deliveryId: 'd\x9d0;title\x9c' });
    for (const url of [textUrl, jsonUrl]) {
      expect(await post(url, hostile, '{}')).toBe(400);
      expect(await post(url, signed.headers, signed.body)).toBe(200);
    }

    const printed: string[] = [];
    for (let i = 0; i < 3; i++) printed.push((await textLines.next()).value as string);
    // The rest of the pretty-printed event, up to its closing brace.
    for (let line = ''; line !== '}'; printed.push(line)) line = (await textLines.next()).value as string;
    const output = printed.join('\n');
    expect(output).not.toMatch(RAW_CONTROL);
    expect(output).toContain('delivery d\\x9b2J\\x9b31mred');
    expect(output).toContain('"nope\\x9b2J" is not a key=value pair');
    expect(output).toContain('evt_\\x1b[2J');
    expect(output).toContain('csi \\u009b31m, bidi \\u202eevil');

    const records = [(await jsonLines.next()).value as string, (await jsonLines.next()).value as string];
    expect(records.join('\n')).not.toMatch(RAW_CONTROL);
    // The JSON still means the same: the strings read back exactly.
    expect(JSON.parse(records[0] as string).deliveryId).toBe(hostile['x-service-delivery']);
    expect(JSON.parse(records[1] as string).event.data.object.note).toBe('csi \u009b31m, bidi \u202eevil');
  });

  test('send and simulate: an answer with escape sequences is printed escaped', async () => {
    const [html, json] = await Promise.all([
      answering(404, 'text/html\x9b2J', '<h1>\x1b[2J\x1b]0;pwned\x07Not here \u202e</h1>'),
      answering(500, 'application/json', JSON.stringify({ error: { code: 'X\u001b[31m\u009b2J', message: 'm' } })),
    ]);
    servers.push(html, json);
    const results = await Promise.all([
      run(['send', urlOf(html), '--type', 'image.created']),
      run(['send', urlOf(json), '--type', 'image.created']),
      run(['send', urlOf(json), '--type', 'image.created', '--json']),
      run(['simulate', urlOf(json), '--max-attempts', '1']),
      run(['simulate', urlOf(json), '--max-attempts', '1', '--json']),
    ]);
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(`${result.stdout}${result.stderr}`).not.toMatch(RAW_CONTROL);
    }
    expect(results[0]?.stdout).toContain('\\x1b[2J\\x1b]0;pwned\\x07Not here \\u202e');
    expect(results[1]?.stdout).toContain('500 Internal Server Error X\\x1b[31m\\x9b2J');
    expect(JSON.parse(JSON.parse(results[2]?.stdout as string).body).error.code).toBe('X\u001b[31m\u009b2J');
    expect(results[3]?.stdout).toContain('X\\x1b[31m\\x9b2J');
  });

  test('verify: a captured header with escape sequences is printed escaped', async () => {
    const result = await run(['verify', '--header', 'x\x1b]0;pwned\x07\u009b2J'], { input: '{}' });
    expect(result.code).toBe(1);
    expect(result.stdout).not.toMatch(RAW_CONTROL);
    expect(result.stdout).toContain('"x\\x1b]0;pwned\\x07\\x9b2J" is not a key=value pair');
  });

  test('a mistyped command, option or choice is echoed escaped', async () => {
    const results = await Promise.all([
      run(['sned\x1b[2J\x1b]0;pwned\x07']),
      run(['send', 'http://127.0.0.1:1/webhooks', '--type', 'image.created', '--deadlin\x1b[31m', '1']),
      run(['dead-letters', 'lst\u009b2J']),
    ]);
    for (const result of results) {
      expect(result.code).toBe(2);
      expect(result.stderr).not.toMatch(RAW_CONTROL);
    }
    expect(results[0]?.stderr).toContain("unknown command 'sned\\x1b[2J\\x1b]0;pwned\\x07'");
    expect(results[1]?.stderr).toContain("unknown option '--deadlin\\x1b[31m'");
    expect(results[2]?.stderr).toContain('lst\\x9b2J');
  });

  test('an error that quotes a file is printed escaped', async () => {
    const result = await run(['send', 'http://127.0.0.1:1/webhooks', '--type', 'image.created', '--data', '-'], {
      input: '\u001b[2J\u009b31m',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('is not JSON');
    expect(result.stderr).not.toMatch(RAW_CONTROL);
  });
});
