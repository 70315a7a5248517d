// The example Grafana dashboard (docs/grafana/pixhook.json) imports as it is: one Prometheus data
// source input, every query on it, and every metric a query reads is one docs/operating.md's
// metrics table names, as are those of the page's alert rules. That the table's names are what
// the Prometheus exporter really exposes, with the labels these queries use, is checked against a
// real scrape by test/example-opentelemetry.test.ts.
import { describe, expect, it } from 'vitest';
import {
  alertQueries,
  dashboard,
  dashboardQueries,
  documentedMetrics,
  inlineAlertQueries,
  labelNamesIn,
  metricNamesIn,
  queryableNames,
} from './prometheus-queries.js';

// The variable Grafana fills in on import, as text.
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's ${…} syntax, not a template.
const DATASOURCE = { type: 'prometheus', uid: '${DS_PROMETHEUS}' };

interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { refId: string; expr: string; datasource?: unknown }[];
}

describe('docs/grafana/pixhook.json', () => {
  const board = dashboard();
  const panels = board.panels as unknown as Panel[];
  const queries = dashboardQueries();

  it('asks for one Prometheus data source on import, and every panel and query uses it', () => {
    expect(board.__inputs).toEqual([
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource', pluginId: 'prometheus' }),
    ]);
    const withQueries = panels.filter((panel) => panel.type !== 'row');
    expect(withQueries.length).toBeGreaterThan(10);
    for (const panel of withQueries) {
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource, panel.title).toEqual(DATASOURCE);
        expect(target.expr.trim(), panel.title).not.toBe('');
      }
    }
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('queries only metrics docs/operating.md documents, with parentheses and braces balanced', () => {
    const known = queryableNames();
    expect(known.size).toBeGreaterThan(8);
    const templateQuery = board.templating.list.map((variable) => String(variable.definition ?? ''));
    for (const { title, expr } of [...queries, ...templateQuery.map((expr) => ({ title: 'variable', expr }))]) {
      const names = metricNamesIn(expr);
      if (title !== 'variable') expect(names.length, `${title}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(known, `${title}: ${name}`).toContain(name);
      for (const [open, close] of [
        ['(', ')'],
        ['{', '}'],
        ['[', ']'],
      ] as const) {
        expect(expr.split(open).length, `${title}: ${expr}`).toBe(expr.split(close).length);
      }
    }
  });

  it('shows what docs/operating.md says it does', () => {
    const used = new Set(queries.flatMap(({ expr }) => metricNamesIn(expr)));
    const { names, histograms } = documentedMetrics();
    // Every documented metric has a panel (a histogram through its buckets or its count).
    for (const name of names) {
      const series = histograms.has(name) ? [`${name}_bucket`, `${name}_count`] : [name];
      expect(
        series.some((one) => used.has(one)),
        name,
      ).toBe(true);
    }
    const all = queries.map(({ expr }) => expr).join('\n');
    expect(all).toContain('error_type="SIGNATURE_MISMATCH"');
    expect(all).toContain('pixhook_queue_state="dead_letter"');
    expect(all).toMatch(
      /histogram_quantile\(0\.5, sum by \(le, pixhook_event_type\) \(rate\(pixhook_handler_duration_bucket/,
    );
    expect(all).toMatch(
      /histogram_quantile\(0\.99, sum by \(le, pixhook_event_type\) \(rate\(pixhook_handler_duration_bucket/,
    );
    expect(all).toMatch(/sum by \(pixhook_secret_index\)/);
    expect(all).toMatch(/sum by \(pixhook_queue_state|sum by \(messaging_destination_name, pixhook_queue_state\)/);
  });

  it('lays its panels out without overlap', () => {
    const cells = new Set<string>();
    for (const { title, gridPos } of panels) {
      expect(gridPos.x + gridPos.w, title).toBeLessThanOrEqual(24);
      for (let x = gridPos.x; x < gridPos.x + gridPos.w; x++) {
        for (let y = gridPos.y; y < gridPos.y + gridPos.h; y++) {
          expect(cells.has(`${x},${y}`), `${title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
    }
  });
});

describe("docs/operating.md's alert rules", () => {
  it('query only documented metrics', () => {
    const known = queryableNames();
    const rules = alertQueries();
    expect(rules.map(({ alert }) => alert)).toEqual(
      expect.arrayContaining(['PixhookSignatureMismatch', 'PixhookEndpointAtRisk', 'PixhookDeadLettersGrowing']),
    );
    const inline = inlineAlertQueries();
    expect(inline.length).toBeGreaterThan(0);
    for (const { alert, expr } of [...rules, ...inline.map((expr) => ({ alert: 'inline', expr }))]) {
      const names = metricNamesIn(expr);
      expect(names.length, `${alert}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(known, `${alert}: ${name}`).toContain(name);
      expect(
        labelNamesIn(expr).every((label) => /^[a-z_]+$/.test(label)),
        `${alert}: ${expr}`,
      ).toBe(true);
    }
  });
});
