// Every code block of README.md and of each package's README runs as printed: a user copies it
// into an ES-module project (package.json "type": "module", the packages installed), runs it with
// SIGNING_SECRET set, and sends it a real signed delivery with `pixhook send`. This file does the
// same with the built packages, so a block that stops working fails here.
//
// Each block is marked by an HTML comment right before it, which GitHub and npm do not show:
//
//   <!-- test: run, send image.created, expect 200 -->  a server: started with PORT set, sent one
//        delivery by the CLI; the answer must have that status and the handler must print the
//        event's id. Options: `redis` / `postgres` (a real server from test/helpers; REDIS_URL or
//        DATABASE_URL set, skipped with a note where none can run), `as fetch` (its `POST` or
//        default export's `fetch` is served on node:http, as Next.js, Hono on Bun or Workers would),
//        `as lambda` (served by examples/lambda/local.mjs, as the Lambda README shows), `at /PATH`
//        (the delivery is sent to that path instead of /webhooks: `at /webhooks/acme` for a tenant).
//   <!-- test: exits -->      a program that runs to its end: it must exit 0.
//   <!-- test: file NAME -->  a module the next run/exits/typecheck block imports, written as NAME.
//   <!-- test: run NAME, … --> (or `exits NAME`) the block written as NAME (default index.js/.ts).
//   <!-- test: typecheck, WHY NOT RUN -->  TypeScript: compiled, not run.
//   <!-- test: not run, WHY -->  not a program (shell lines, SQL, a fragment of a block above).
//
// A block without a mark fails the test, so none escapes. TypeScript blocks are compiled by the
// TypeScript compiler as `tsc` would (with the README's tsconfig.json block if it has one, else
// strict NodeNext with Nest's decorator settings), type errors fail, and the emitted JavaScript runs.
//
// The Markdown is parsed by remark (remark-cli's `--tree-out`, the devDependency `pnpm check:links`
// runs), so fences inside lists, tildes and longer fences are read as GitHub reads them.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@pixhook/test-helpers/ports';
import { describeWithPostgres, type PostgresServer, startPostgresServer } from '@pixhook/test-helpers/postgres-server';
import { describeWithRedis, type RedisServer, startRedisServer } from '@pixhook/test-helpers/redis-server';
import pg from 'pg';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLI = join(ROOT, 'packages/cli/dist/cli.js');
const LAMBDA_LOCAL = join(ROOT, 'examples/lambda/local.mjs');
const SECRET = 'whsec_readme_blocks_7c3e19';
/** Generous: Nest boots and Postgres answers slowly on two busy cores. */
const CEILING_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Reading the blocks

interface MdNode {
  type: string;
  value?: string;
  lang?: string | null;
  meta?: string | null;
  position?: { start: { line: number } };
  children?: MdNode[];
}

interface Block {
  file: string;
  line: number;
  lang: string;
  code: string;
  /** The `test:` comment right before the block, without `test:`; undefined when there is none. */
  mark: string | undefined;
}

const MARK = /^<!--\s*test:\s*([\s\S]*?)\s*-->$/;

/** The file's syntax tree, as JSON from remark-cli (one process per file: with several, it writes files). */
async function readBlocks(file: string): Promise<Block[]> {
  const remark = spawn(join(ROOT, 'node_modules/.bin/remark'), [
    '--tree-out',
    '--no-config',
    '--quiet',
    join(ROOT, file),
  ]);
  let stdout = '';
  let stderr = '';
  remark.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  remark.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const [code] = await once(remark, 'close');
  if (code !== 0) throw new Error(`remark could not parse ${file}: ${stderr}`);
  const blocks: Block[] = [];
  const walk = (node: MdNode) => {
    const children = node.children ?? [];
    children.forEach((child, index) => {
      if (child.type === 'code') {
        const previous = children[index - 1];
        const mark = previous?.type === 'html' ? MARK.exec(previous.value?.trim() ?? '')?.[1] : undefined;
        blocks.push({
          file,
          line: child.position?.start.line ?? 0,
          lang: child.lang ?? '',
          code: child.value ?? '',
          mark,
        });
      }
      walk(child);
    });
  };
  walk(JSON.parse(stdout) as MdNode);
  return blocks;
}

const MARKDOWN = [
  'README.md',
  ...readdirSync(join(ROOT, 'packages'))
    .map((name) => `packages/${name}/README.md`)
    .filter((file) => existsSync(join(ROOT, file))),
];
const BLOCKS = new Map(await Promise.all(MARKDOWN.map(async (file) => [file, await readBlocks(file)] as const)));

type Mode = 'run' | 'exits' | 'typecheck' | 'file' | 'not run';

interface Mark {
  mode: Mode;
  name: string | undefined;
  send: string;
  expect: number;
  needs: 'redis' | 'postgres' | undefined;
  as: 'fetch' | 'lambda' | undefined;
  /** The path the delivery is sent to. */
  path: string;
  why: string | undefined;
}

/** Reads a mark, or says what is wrong with it. */
function parseMark(text: string): Mark | string {
  const [head = '', ...rest] = text.split(',').map((part) => part.trim());
  const mode = (['not run', 'typecheck', 'exits', 'file', 'run'] as const).find(
    (m) => head === m || head.startsWith(`${m} `),
  );
  if (!mode) return `unknown mark "${text}": start with run, exits, file, typecheck or not run`;
  const mark: Mark = {
    mode,
    name: head.slice(mode.length).trim() || undefined,
    send: 'image.created',
    expect: 200,
    needs: undefined,
    as: undefined,
    path: '/webhooks',
    why: undefined,
  };
  if (mode === 'not run' || mode === 'typecheck') {
    mark.why = rest.join(', ');
    if (!mark.why) return `"${mode}" needs a reason: <!-- test: ${mode}, why -->`;
    return mark;
  }
  if (mode === 'file' && !mark.name) return 'a "file" mark needs a name: <!-- test: file app.module.ts -->';
  for (const option of rest) {
    const [key, value] = option.split(/\s+/, 2);
    if (key === 'send' && value) mark.send = value;
    else if (key === 'expect' && value) mark.expect = Number(value);
    else if (key === 'at' && value?.startsWith('/')) mark.path = value;
    else if (option === 'redis' || option === 'postgres') mark.needs = option;
    else if (option === 'as fetch' || option === 'as lambda') mark.as = option === 'as fetch' ? 'fetch' : 'lambda';
    else return `unknown option "${option}" in "${text}"`;
  }
  return mark;
}

/** A program to test: its files (modules first, the one to run last) and how to run it. */
interface Program {
  id: string;
  title: string;
  files: { name: string; code: string }[];
  mark: Mark;
}

const PROGRAMS: Program[] = [];
const PROBLEMS = new Map<string, string[]>();
for (const [file, blocks] of BLOCKS) {
  const problems: string[] = [];
  let pending: { name: string; code: string }[] = [];
  for (const block of blocks) {
    const where = `${file}:${block.line}`;
    if (block.mark === undefined) {
      problems.push(
        `${where}: a \`\`\`${block.lang} block with no <!-- test: … --> mark before it (run it, or say why it is not run)`,
      );
      continue;
    }
    const mark = parseMark(block.mark);
    if (typeof mark === 'string') {
      problems.push(`${where}: ${mark}`);
      continue;
    }
    // The handler's own error (or the store's) is the cause: a listener that drops it hides the failure.
    if (/\bonError\(|@OnWebhookError\(/.test(block.code) && !/\.cause\b/.test(block.code)) {
      problems.push(`${where}: an onError listener that does not log error.cause (your handler's own error)`);
    }
    if (mark.mode === 'not run') continue;
    const typescript = block.lang === 'ts' || block.lang === 'typescript';
    if (!typescript && !['js', 'javascript', 'json'].includes(block.lang)) {
      problems.push(`${where}: a \`\`\`${block.lang} block can only be marked "not run"`);
      continue;
    }
    if (mark.mode === 'typecheck' && !typescript) problems.push(`${where}: only TypeScript can be "typecheck"ed`);
    if (block.lang === 'json' && mark.name !== 'tsconfig.json') {
      problems.push(`${where}: a \`\`\`json block can only be "file tsconfig.json" or "not run"`);
    }
    const name = mark.name ?? (typescript ? 'index.ts' : 'index.js');
    pending.push({ name, code: block.code });
    if (mark.mode === 'file') continue;
    const slug = `${file.replace(/\/README\.md$|\.md$/, '').replace(/[^a-z0-9]+/gi, '-')}-${block.line}`;
    PROGRAMS.push({ id: slug, title: `${where} (${name})`, files: pending, mark });
    pending = [];
  }
  if (pending.length > 0) problems.push(`${file}: "file" blocks with no run, exits or typecheck block after them`);
  PROBLEMS.set(file, problems);
}

// ---------------------------------------------------------------------------------------------
// The project the blocks run in: "type": "module", node_modules as `npm install` would leave it

/** Installed package → the workspace folder whose node_modules has the copy pixhook's packages use. */
const DEPENDENCIES: Record<string, string> = {
  express: 'examples',
  fastify: 'examples',
  koa: 'examples',
  ioredis: 'examples',
  pg: 'examples',
  'reflect-metadata': 'examples',
  rxjs: 'examples',
  '@nestjs/common': 'examples',
  '@nestjs/core': 'examples',
  '@nestjs/config': 'examples',
  '@nestjs/platform-express': 'examples',
  '@nestjs/platform-fastify': 'packages/nestjs',
  hono: 'packages/fetch',
  redis: 'packages/redis',
  bullmq: 'packages/bullmq',
  'pg-boss': 'packages/pg-boss',
  '@opentelemetry/api': 'packages/opentelemetry',
  '@opentelemetry/instrumentation': 'packages/opentelemetry',
  '@opentelemetry/instrumentation-http': 'packages/opentelemetry',
  '@opentelemetry/sdk-metrics': 'packages/opentelemetry',
  '@opentelemetry/sdk-trace-node': 'packages/opentelemetry',
  kysely: 'packages/postgres',
  'drizzle-orm': 'packages/postgres',
  '@types/node': '.',
  '@types/express': '.',
  '@types/koa': '.',
  '@types/pg': '.',
  '@types/aws-lambda': 'packages/lambda',
  zod: '.',
  valibot: '.',
  arktype: '.',
};

let project: string | undefined;

function makeProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixhook-readme-'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'your-app', private: true, type: 'module' }));
  const link = (name: string, target: string) => {
    mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
    symlinkSync(target, join(dir, 'node_modules', name), 'dir');
  };
  for (const name of readdirSync(join(ROOT, 'packages'))) link(`@pixhook/${name}`, join(ROOT, 'packages', name));
  for (const [name, from] of Object.entries(DEPENDENCIES)) {
    link(name, realpathSync(join(ROOT, from, 'node_modules', name)));
  }
  return dir;
}

beforeAll(() => {
  project = makeProject();
});
afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Compiling TypeScript blocks as tsc would

/** What `tsc` would use without the README's own tsconfig.json: a strict ES-module Node project. */
const DEFAULT_TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    strict: true,
    skipLibCheck: true,
    experimentalDecorators: true,
    emitDecoratorMetadata: true,
    outDir: 'dist',
  },
};

/** Type-checks and emits the program's TypeScript into dir/dist; throws with every diagnostic. */
/**
 * Declaration files parsed once for every program (the lib, @types/node, Nest's, pixhook's dist), as
 * the language service's document registry does: parsing them is most of a program's cost.
 */
const parsedDeclarations = new Map<string, ts.SourceFile>();

function compilerHost(options: ts.CompilerOptions, dir: string): ts.CompilerHost {
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersionOrOptions, onError, shouldCreate) => {
    if (fileName.startsWith(dir) || !fileName.endsWith('.d.ts')) {
      return getSourceFile(fileName, languageVersionOrOptions, onError, shouldCreate);
    }
    const key = `${fileName}\0${JSON.stringify(languageVersionOrOptions)}`;
    let file = parsedDeclarations.get(key);
    if (!file) {
      file = getSourceFile(fileName, languageVersionOrOptions, onError, shouldCreate);
      if (file) parsedDeclarations.set(key, file);
    }
    return file;
  };
  return host;
}

function compile(dir: string, files: string[], tsconfig: string | undefined): void {
  const json = tsconfig === undefined ? DEFAULT_TSCONFIG : ts.parseConfigFileTextToJson('tsconfig.json', tsconfig);
  if ('error' in json && json.error) throw new Error(ts.flattenDiagnosticMessageText(json.error.messageText, '\n'));
  const config = 'config' in json ? json.config : json;
  const parsed = ts.parseJsonConfigFileContent({ ...config, files: files.map((file) => join(dir, file)) }, ts.sys, dir);
  const options = { ...parsed.options, rootDir: dir, outDir: join(dir, 'dist') };
  const program = ts.createProgram(parsed.fileNames, options, compilerHost(options, dir));
  const emitted = program.emit();
  const diagnostics = [...ts.getPreEmitDiagnostics(program), ...emitted.diagnostics, ...parsed.errors];
  if (diagnostics.length > 0) {
    throw new Error(
      ts.formatDiagnostics(diagnostics, {
        getCanonicalFileName: (name) => name,
        getCurrentDirectory: () => dir,
        getNewLine: () => '\n',
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Running a program and sending it a delivery

/** Serves a module's `POST` (Next.js) or its default export's `fetch` (Hono, Bun, Workers) on node:http. */
const FETCH_SERVER = `import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
const mod = await import(pathToFileURL(process.argv[2]).href);
const handle = mod.POST ?? ((request) => mod.default.fetch(request));
createServer(async (req, res) => {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) for (const v of [value].flat()) headers.append(name, v);
  const body = ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks);
  const response = await handle(new Request('http://127.0.0.1' + req.url, { method: req.method, headers, body }));
  res.writeHead(response.status, Object.fromEntries(response.headers)).end(Buffer.from(await response.arrayBuffer()));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Running {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function start(args: string[], cwd: string, env: Record<string, string>): Running {
  const { NODE_OPTIONS: _, VITEST: __, ...inherited } = process.env;
  const child = spawn(process.execPath, args, { cwd, env: { ...inherited, ...env } });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = once(child, 'close').then(([code]) => code as number | null);
  return { child, output: () => output, exited };
}

/** Resolves once the port accepts connections; rejects if the program exits or the ceiling passes. */
async function listening(running: Running, port: number): Promise<void> {
  const deadline = Date.now() + CEILING_MS;
  let exited = false;
  void running.exited.then(() => {
    exited = true;
  });
  while (!(await connects(port))) {
    if (exited) throw new Error(`the program exited before listening on PORT:\n${running.output()}`);
    if (Date.now() > deadline)
      throw new Error(`nothing listened on PORT within ${CEILING_MS} ms:\n${running.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Resolves once the program has printed `text`; rejects at the ceiling, or if it exits first. */
function printed(running: Running, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (running.output().includes(text)) {
        clearTimeout(timer);
        running.child.stdout?.off('data', check);
        running.child.stderr?.off('data', check);
        resolve();
      }
    };
    const timer = setTimeout(
      () => reject(new Error(`the handler did not print ${text} within ${CEILING_MS} ms:\n${running.output()}`)),
      CEILING_MS,
    );
    running.child.stdout?.on('data', check);
    running.child.stderr?.on('data', check);
    void running.exited.then(() => {
      check();
      clearTimeout(timer);
      reject(new Error(`the program exited before printing ${text}:\n${running.output()}`));
    });
    check();
  });
}

/** `pixhook send` with the CLI's built dist, as a user runs it. */
async function send(
  port: number,
  path: string,
  type: string,
  eventId: string,
): Promise<{ status: number; body: unknown }> {
  const cli = start(
    [CLI, 'send', `http://127.0.0.1:${port}${path}`, '--type', type, '--event-id', eventId, '--json'],
    ROOT,
    { PIXHOOK_SECRET: SECRET, NO_COLOR: '1' },
  );
  await cli.exited;
  try {
    return JSON.parse(cli.output()) as { status: number; body: unknown };
  } catch {
    throw new Error(`pixhook send printed no JSON:\n${cli.output()}`);
  }
}

async function stop(running: Running): Promise<void> {
  if (running.child.exitCode !== null || running.child.signalCode !== null) return;
  running.child.kill('SIGTERM');
  const timer = setTimeout(() => running.child.kill('SIGKILL'), 15_000);
  await running.exited;
  clearTimeout(timer);
}

async function runProgram(program: Program, env: Record<string, string> = {}): Promise<void> {
  if (!project) throw new Error('no project');
  const dir = join(project, program.id);
  mkdirSync(dir, { recursive: true });
  const tsconfig = program.files.find((file) => file.name === 'tsconfig.json')?.code;
  const sources = program.files.filter((file) => file.name !== 'tsconfig.json');
  for (const file of sources) {
    mkdirSync(dirname(join(dir, file.name)), { recursive: true });
    writeFileSync(join(dir, file.name), file.code);
  }
  const main = sources.at(-1)?.name ?? '';
  const typescript = sources.filter((file) => file.name.endsWith('.ts')).map((file) => file.name);
  if (typescript.length > 0) compile(dir, typescript, tsconfig);
  if (program.mark.mode === 'typecheck') return;
  const entry = main.endsWith('.ts') ? join(dir, 'dist', main.replace(/\.ts$/, '.js')) : join(dir, main);

  const port = await freePort();
  let args = [entry];
  if (program.mark.as === 'fetch') {
    writeFileSync(join(dir, 'fetch-server.mjs'), FETCH_SERVER);
    args = [join(dir, 'fetch-server.mjs'), entry];
  } else if (program.mark.as === 'lambda') {
    args = [LAMBDA_LOCAL, entry];
  }
  const running = start(args, dir, { SIGNING_SECRET: SECRET, PORT: String(port), ...env });
  try {
    if (program.mark.mode === 'exits') {
      const timer = setTimeout(() => running.child.kill('SIGKILL'), CEILING_MS);
      const code = await running.exited;
      clearTimeout(timer);
      expect(code, running.output()).toBe(0);
      return;
    }
    await listening(running, port);
    const eventId = `evt_readme_${program.id.replace(/-/g, '_')}_${Date.now()}`;
    const answer = await send(port, program.mark.path, program.mark.send, eventId);
    expect(answer.status, `${JSON.stringify(answer)}\n${running.output()}`).toBe(program.mark.expect);
    await printed(running, eventId);
  } finally {
    await stop(running);
  }
  expect(running.output()).not.toContain(SECRET);
}

// ---------------------------------------------------------------------------------------------

describe('every block of the READMEs is marked', () => {
  it.each(MARKDOWN)('%s', (file) => {
    expect(PROBLEMS.get(file)).toEqual([]);
  });
});

const plain = PROGRAMS.filter((program) => program.mark.needs === undefined);
const withRedis = PROGRAMS.filter((program) => program.mark.needs === 'redis');
const withPostgres = PROGRAMS.filter((program) => program.mark.needs === 'postgres');
if (withRedis.length > 16)
  throw new Error('Redis has 16 databases: more Redis programs than that need another way apart');

// Concurrently (each program has its own folder, port, Redis database and Postgres database): most of
// the time is spent waiting for processes to start. The three groups run at once too, so Redis and
// Postgres start while the plain programs run.
describe.concurrent('README blocks run as printed', () => {
  it.concurrent.each(plain.map((program) => [program.title, program] as const))(
    '%s',
    async (_title, program) => {
      await runProgram(program);
    },
    180_000,
  );
});

describeWithRedis.concurrent('README blocks run as printed, with Redis', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis?.close();
  });
  // Each program its own Redis database, so one's queue or keys never reach another.
  it.concurrent.each(withRedis.map((program, index) => [program.title, program, index] as const))(
    '%s',
    async (_title, program, index) => {
      await runProgram(program, { REDIS_URL: `redis://127.0.0.1:${redis.port}/${index % 16}` });
    },
    180_000,
  );
});

describeWithPostgres.concurrent('README blocks run as printed, with Postgres', () => {
  let postgres: PostgresServer;
  beforeAll(async () => {
    postgres = await startPostgresServer();
  });
  afterAll(async () => {
    await postgres?.close();
  });
  // Each program its own database, as a new app would have.
  it.concurrent.each(withPostgres.map((program, index) => [program.title, program, index] as const))(
    '%s',
    async (_title, program, index) => {
      const admin = new pg.Client({ connectionString: postgres.url });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE readme_${index}`);
      } finally {
        await admin.end();
      }
      await runProgram(program, { DATABASE_URL: postgres.url.replace(/\/postgres$/, `/readme_${index}`) });
    },
    180_000,
  );
});
