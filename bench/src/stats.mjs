// Medians, spreads and ratios across rounds.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** `{ median, min, max, n }` of a list of numbers. */
export function spread(values) {
  return { median: median(values), min: Math.min(...values), max: Math.max(...values), n: values.length };
}

/** Element-wise `a[i] / b[i]`: ratios of two series measured in the same rounds. */
export function ratios(a, b) {
  return a.map((value, i) => value / b[i]);
}

/** `1.23× (1.10–1.40)` */
export function formatRatio(s, digits = 2) {
  return `${s.median.toFixed(digits)}× (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

/** Rotates a list by `k`. */
export function rotate(list, k) {
  const n = list.length;
  const shift = ((k % n) + n) % n;
  return [...list.slice(shift), ...list.slice(0, shift)];
}

/**
 * The order in which round `k` visits the scenarios: rotated by `k`, and reversed every other
 * round, so that neighbours are measured in both orders and none always runs right after another.
 */
export function roundOrder(list, k) {
  const rotated = rotate(list, k);
  return k % 2 === 1 ? rotated.reverse() : rotated;
}
