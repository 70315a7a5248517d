// Formatting shared by the commands that print what a server holds (dead letters, the inbox).
// Every cell given to `table` is escaped already; `indented` and `firstLine` take raw text.
import { escapeText } from './escape.js';
import { pc } from './output.js';

export function plural(count: number, word: string): string {
  return count === 1 ? word : `${word}s`;
}

/** An ISO 8601 time, to the millisecond. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** An ISO 8601 time, to the second. */
export function isoSeconds(ms: number): string {
  return iso(ms).replace(/\.\d{3}Z$/, 'Z');
}

/** The first line of a text, cut to `width` characters (whole code points), unescaped. */
export function firstLine(text: string, width: number): string {
  const line = text.split(/\r\n|[\r\n\u2028\u2029]/, 1)[0] ?? '';
  const chars = Array.from(line);
  const more = chars.length > width || line.length < text.length;
  return `${chars.slice(0, width).join('')}${more ? '…' : ''}`;
}

/** Each line escaped on its own and indented, so that a stack keeps its shape and nothing raw gets through. */
export function indented(text: string, indent = '  '): string {
  return text
    .split(/\r?\n/)
    .map((line) => `${indent}${escapeText(line)}\n`)
    .join('');
}

/**
 * Left-aligned columns, two spaces apart; the cells are escaped already. `width` measures a cell
 * (give one that skips colour codes when cells are coloured).
 */
export function table(
  header: string[],
  rows: string[][],
  width: (cell: string) => number = (cell) => cell.length,
): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => width(row[column] ?? ''))));
  const pad = (cell: string, column: number) => cell + ' '.repeat(Math.max(0, (widths[column] ?? 0) - width(cell)));
  const line = (cells: string[]) =>
    cells.map((cell, column) => (column === cells.length - 1 ? cell : pad(cell, column))).join('  ');
  return `${pc.dim(line(header))}\n${rows.map((row) => `${line(row)}\n`).join('')}`;
}
