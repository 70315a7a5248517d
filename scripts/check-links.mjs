#!/usr/bin/env node
// `pnpm check:links`: every link in the repository's markdown resolves. Run as a script it hands the
// files to `remark` (remark-cli) with this module as its configuration, and exits non-zero on the
// first broken link (`--frail`); imported by remark, it is that configuration.
//
// - remark-validate-links checks relative links and `https://github.com/pixhook/pixhook/blob/<branch>/…`
//   links (the `repository` of package.json) against the files and headings in this checkout.
// - pixhookLinks adds what remark-validate-links does not check:
//   - a link into this repository names the `main` branch (remark-validate-links ignores the branch,
//     so `blob/master/…` would pass and then 404), and `tree/main/<dir>` links point at a directory
//     that exists (it only understands `blob/`);
//   - a package README has no relative link that leaves the package or names a file the package does
//     not publish: those links break on the registry's page and inside node_modules. Link the rest of
//     the repository with `https://github.com/pixhook/pixhook/blob/main/<path>`.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import remarkValidateLinks from 'remark-validate-links';

const root = fileURLToPath(new URL('../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const repository = String(manifest.repository?.url ?? manifest.repository)
  .replace(/^git\+/, '')
  .replace(/\.git$/, '');
const repoUrl = new URL(repository); // https://github.com/pixhook/pixhook
const repoPath = repoUrl.pathname.replace(/\/$/, ''); // /pixhook/pixhook

/** The markdown files the check covers, relative to the root. */
export function markdownFiles() {
  const files = ['README.md', 'CONTRIBUTING.md', 'examples/README.md', 'bench/README.md', '.changeset/README.md'];
  for (const name of readdirSync(join(root, 'packages'))) files.push(`packages/${name}/README.md`);
  const walk = (dir) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  if (existsSync(join(root, 'docs'))) walk('docs');
  return files.filter((file) => existsSync(join(root, file)));
}

/** Link-like nodes of a markdown tree: links, images and definitions, with a `url`. */
function* linkNodes(node) {
  if (typeof node.url === 'string' && (node.type === 'link' || node.type === 'image' || node.type === 'definition')) {
    yield node;
  }
  for (const child of node.children ?? []) yield* linkNodes(child);
}

const isExternal = (url) => /^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//');

/** Files a package publishes: its `files` entries (and the README, always packed), relative to the package. */
function publishedFiles(packageDir) {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  return ['package.json', 'README.md', ...(pkg.files ?? [])];
}

/** The checks remark-validate-links leaves out (see the top of this file). */
function pixhookLinks() {
  return (tree, file) => {
    const path = resolve(file.cwd, file.path);
    const fromRoot = relative(root, path).split(sep).join('/');
    const packageMatch = /^packages\/[^/]+\/README\.md$/.test(fromRoot);
    const packageDir = dirname(path);
    for (const node of linkNodes(tree)) {
      const { url } = node;
      let parsed;
      try {
        parsed = isExternal(url) ? new URL(url) : undefined;
      } catch {
        file.message(`Cannot parse the link \`${url}\``, { place: node.position, ruleId: 'pixhook-links' });
        continue;
      }
      if (parsed) {
        if (parsed.hostname !== repoUrl.hostname) continue;
        const pathname = decodeURIComponent(parsed.pathname);
        if (!pathname.startsWith(`${repoPath}/blob/`) && !pathname.startsWith(`${repoPath}/tree/`)) continue;
        const [, kind, branch, ...rest] = pathname.slice(repoPath.length).split('/');
        if (branch !== 'main') {
          file.message(`Link \`${url}\` names the branch \`${branch}\`; link the \`main\` branch: ${kind}/main/…`, {
            place: node.position,
            ruleId: 'pixhook-links',
          });
          continue;
        }
        const target = join(root, ...rest);
        if (kind === 'tree' && !(existsSync(target) && statSync(target).isDirectory())) {
          file.message(`Link \`${url}\` points at \`${rest.join('/')}\`, which is not a directory here`, {
            place: node.position,
            ruleId: 'pixhook-links',
          });
        }
        continue;
      }
      if (!packageMatch || url.startsWith('#')) continue;
      const [pathPart, hash] = url.split('#');
      const target = resolve(packageDir, decodeURIComponent(pathPart.split('?')[0]));
      const inside = relative(packageDir, target).split(sep).join('/');
      const kind = existsSync(target) && statSync(target).isDirectory() ? 'tree' : 'blob';
      const absolute = `${repoUrl.origin}${repoPath}/${kind}/main/${relative(root, target).split(sep).join('/')}${hash === undefined ? '' : `#${hash}`}`;
      if (inside.startsWith('..')) {
        file.message(
          `Link \`${url}\` leaves the package: it breaks on the registry and in node_modules; use ${absolute}`,
          { place: node.position, ruleId: 'pixhook-links' },
        );
      } else if (!publishedFiles(packageDir).some((f) => inside === f || inside.startsWith(`${f}/`))) {
        file.message(`Link \`${url}\` names a file the package does not publish; use ${absolute}`, {
          place: node.position,
          ruleId: 'pixhook-links',
        });
      }
    }
  };
}

/** remark's configuration when it loads this file (`--rc-path`). */
export default {
  plugins: [[remarkValidateLinks, { repository, root }], pixhookLinks],
};

function main() {
  // remark-cli is a root devDependency; its package exports nothing to resolve, so take its bin.
  const cli = join(root, 'node_modules', 'remark-cli', 'cli.js');
  const files = markdownFiles();
  const result = spawnSync(
    process.execPath,
    [cli, '--rc-path', fileURLToPath(import.meta.url), '--no-stdout', '--quiet', '--frail', ...files],
    { cwd: root, stdio: 'inherit' },
  );
  if (result.status !== 0) {
    console.error(
      `pixhook: a link in the markdown above is broken (${files.length} files checked); fix it or its target.`,
    );
    process.exit(result.status || 1);
  }
  console.log(`check:links: ${files.length} markdown files, every link resolves`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) main();
