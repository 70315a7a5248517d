// Number formatting shared by the console and Markdown reports.

export function ns(value) {
  if (value >= 1e6) return `${(value / 1e6).toFixed(2)} ms`;
  if (value >= 1e3) return `${(value / 1e3).toFixed(1)} µs`;
  return `${value.toFixed(0)} ns`;
}

/** `1.23× (1.10–1.40)` from a spread. */
export function ratio(s, digits = 2) {
  return `${s.median.toFixed(digits)}× (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

/** Milliseconds measured in fractions of one: `0.78`, `4.81`, `12.3`; `—` when there is no figure. */
export function fineMs(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return '—';
  return value < 10 ? value.toFixed(2) : value.toFixed(1);
}

export function int(value) {
  return Math.round(value).toLocaleString('en-US');
}

/** `12,345 (11,000–13,000)` */
export function intSpread(s) {
  return `${int(s.median)} (${int(s.min)}–${int(s.max)})`;
}

export function mib(bytes) {
  return `${(bytes / 2 ** 20).toFixed(2)} MiB`;
}

export function mark(holds) {
  return holds ? '✅ holds' : '❌ missed';
}

/** A Markdown table. */
export function table(head, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n');
}

/** A plain-text table for the terminal. */
export function textTable(head, rows) {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
