#!/usr/bin/env node
// Replaces one marked section (<!-- section:NAME --> … <!-- /section:NAME -->) of the markdown file
// that holds it — README.md or a page under docs/ — with the contents of a file, under a lock held by
// the caller (flock /tmp/pixhook-readme.lock node scripts/readme-section.mjs NAME FILE). The file's
// links are written relative to the repository root; they are rewritten relative to the page.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const [name, file] = process.argv.slice(2);
if (!name || !file) {
  console.error('usage: node scripts/readme-section.mjs <section> <file>');
  process.exit(2);
}
const root = fileURLToPath(new URL('../', import.meta.url));
const start = `<!-- section:${name} -->`;
const end = `<!-- /section:${name} -->`;

/** README.md and every markdown page under docs/, as paths relative to the root. */
function pages() {
  const found = ['README.md'];
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return found;
}

const holders = pages().filter((page) => readFileSync(join(root, page), 'utf8').includes(start));
if (holders.length !== 1) {
  console.error(
    holders.length === 0
      ? `pixhook: no page has a section ${name}; add ${start} … ${end} to README.md or a page under docs/.`
      : `pixhook: section ${name} is in several pages (${holders.join(', ')}); keep it in one.`,
  );
  process.exit(1);
}
const page = holders[0];
const text = readFileSync(join(root, page), 'utf8');
const a = text.indexOf(start);
const b = text.indexOf(end);
if (b === -1 || b < a) {
  console.error(`pixhook: ${page} opens section ${name} but does not close it with ${end}.`);
  process.exit(1);
}

// Root-relative link targets such as (docs/benchmarks.md) become (benchmarks.md) in docs/README.md.
const base = dirname(page);
const rebase = (target) => {
  if (/^([a-z][a-z0-9+.-]*:|#|\/)/i.test(target)) return target;
  const moved = relative(base, target).split('\\').join('/');
  return posix.normalize(moved) || target;
};
const body = readFileSync(file, 'utf8')
  .trim()
  .replace(/\]\(([^)\s]+)\)/g, (_, target) => `](${rebase(target)})`);
writeFileSync(join(root, page), `${text.slice(0, a + start.length)}\n${body}\n${text.slice(b)}`);
console.log(`${page}: section ${name} replaced`);
