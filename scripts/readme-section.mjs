#!/usr/bin/env node
// Replaces one marked section of README.md with the contents of a file, under a lock held by the
// caller (flock /tmp/pixhook-readme.lock node scripts/readme-section.mjs NAME FILE).
import { readFileSync, writeFileSync } from 'node:fs';

const [name, file] = process.argv.slice(2);
if (!name || !file) {
  console.error('usage: node scripts/readme-section.mjs <section> <file>');
  process.exit(2);
}
const readme = readFileSync('README.md', 'utf8');
const start = `<!-- section:${name} -->`;
const end = `<!-- /section:${name} -->`;
const a = readme.indexOf(start);
const b = readme.indexOf(end);
if (a === -1 || b === -1 || b < a) {
  console.error(`README.md has no section ${name}`);
  process.exit(1);
}
const body = readFileSync(file, 'utf8').trim();
writeFileSync('README.md', `${readme.slice(0, a + start.length)}\n${body}\n${readme.slice(b)}`);
console.log(`README.md: section ${name} replaced`);
