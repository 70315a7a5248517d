// What docs/operating.md and the example Grafana dashboard (docs/grafana/pixhook.json) query: the
// Prometheus metric and label names in their PromQL, and the metric names the page's table
// documents. test/grafana-dashboard.test.ts checks the queries against the table (cheap, no
// process); test/example-opentelemetry.test.ts checks the table and the labels against a real scrape.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const DOCS = fileURLToPath(new URL('../docs/', import.meta.url));

export const OPERATING_PAGE = `${DOCS}operating.md`;
export const DASHBOARD_FILE = `${DOCS}grafana/pixhook.json`;

/** Labels Prometheus adds itself (`job`, `instance`) or a histogram bucket has (`le`). */
export const PROMETHEUS_LABELS = new Set(['job', 'instance', 'le']);

/** The text of one `## heading` section of the page, up to the next one. */
export function pageSection(heading: string): string {
  const page = readFileSync(OPERATING_PAGE, 'utf8');
  const start = page.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`docs/operating.md has no "## ${heading}" section`);
  const end = page.indexOf('\n## ', start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

/**
 * The Prometheus names of the page's metrics table (third column): a histogram's base name
 * (`pixhook_verify_duration`) stands for its `_bucket`, `_sum` and `_count` series.
 */
export function documentedMetrics(): { names: Set<string>; histograms: Set<string> } {
  const names = new Set<string>();
  const histograms = new Set<string>();
  for (const row of pageSection('Metrics').split('\n')) {
    const cells = row.split('|').map((cell) => cell.trim());
    // | OpenTelemetry name | kind, unit | Prometheus name | attributes |
    const name = /^`(pixhook_[a-z_]+)`$/.exec(cells[3] ?? '')?.[1];
    if (name === undefined) continue;
    names.add(name);
    if (/^Histogram\b/.test(cells[2] ?? '')) histograms.add(name);
  }
  return { names, histograms };
}

/** The series names a documented metric may be queried by. */
export function queryableNames(): Set<string> {
  const { names, histograms } = documentedMetrics();
  const all = new Set(names);
  for (const name of histograms) for (const suffix of ['_bucket', '_sum', '_count']) all.add(`${name}${suffix}`);
  return all;
}

/** PromQL without its string literals. */
function withoutStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
}

/** The metric names a PromQL expression reads (label names, inside `{…}` and `by (…)`, left out). */
export function metricNamesIn(expr: string): string[] {
  const bare = withoutStrings(expr)
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  return [...bare.matchAll(/\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()/g)]
    .map(([name]) => name)
    .filter((name) => name.startsWith('pixhook_'));
}

/** The label names a PromQL expression matches or groups by. */
export function labelNamesIn(expr: string): string[] {
  const text = withoutStrings(expr);
  const names: string[] = [];
  for (const [, matchers] of text.matchAll(/\{([^}]*)\}/g)) {
    for (const [, name] of (matchers ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g))
      names.push(name as string);
  }
  for (const [, list] of text.matchAll(/\b(?:by|without|on|ignoring)\s*\(([^)]*)\)/g)) {
    for (const name of (list ?? '').split(',')) if (name.trim()) names.push(name.trim());
  }
  return names;
}

interface Panel {
  type: string;
  title?: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}

/** The dashboard, parsed. */
export function dashboard(): {
  __inputs: { name: string; type: string; pluginId: string }[];
  panels: Panel[];
  templating: { list: { query?: unknown; definition?: string }[] };
} {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8'));
}

/** Every PromQL expression of the dashboard's panels, with its panel's title. */
export function dashboardQueries(): { title: string; expr: string }[] {
  const queries: { title: string; expr: string }[] = [];
  const walk = (panels: Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) queries.push({ title: panel.title ?? '', expr: target.expr ?? '' });
      walk(panel.panels ?? []);
    }
  };
  walk(dashboard().panels);
  return queries;
}

/** The `expr` of every rule in the page's alert rules (the yaml block under "Alerts worth setting"). */
export function alertQueries(): { alert: string; expr: string }[] {
  const block = /```yaml\n([\s\S]*?)```/.exec(pageSection('Alerts worth setting'))?.[1];
  if (block === undefined) throw new Error('docs/operating.md: no yaml block of alert rules');
  const rules: { alert: string; expr: string }[] = [];
  const lines = block.split('\n');
  let alert = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const named = /^\s*- alert:\s*(\S+)/.exec(line);
    if (named) alert = named[1] as string;
    const expr = /^(\s*)expr:\s*(.*)$/.exec(line);
    if (!expr) continue;
    if (expr[2] !== '|') {
      rules.push({ alert, expr: expr[2] as string });
      continue;
    }
    const indent = (expr[1] as string).length;
    const body: string[] = [];
    while (i + 1 < lines.length && /^\s*$|^\s+/.test(lines[i + 1] as string)) {
      const next = lines[i + 1] as string;
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
      body.push(next.trim());
      i++;
    }
    rules.push({ alert, expr: body.join(' ') });
  }
  return rules;
}

/** The PromQL written inline (`sum by (…) (…)`) in the page's alerts section, outside its yaml block. */
export function inlineAlertQueries(): string[] {
  const prose = pageSection('Alerts worth setting').replace(/```yaml\n[\s\S]*?```/, '');
  return [...prose.matchAll(/`([^`]*pixhook_[^`]*\([^`]*)`/g)].map(([, expr]) => expr as string);
}
