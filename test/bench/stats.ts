/** Latency statistics and report lines for `npm run bench`. */

export interface Stats {
  n: number
  median: number
  p99: number
  mean: number
}

export function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN
  return {
    n: sorted.length,
    median: at(0.5),
    p99: at(0.99),
    mean: sorted.reduce((s, x) => s + x, 0) / Math.max(1, sorted.length),
  }
}

/** Times `fn` `n` times (after `warmup` untimed runs), in milliseconds. */
export async function time(
  n: number,
  fn: (i: number) => Promise<unknown>,
  warmup = Math.min(20, n),
): Promise<Stats> {
  for (let i = 0; i < warmup; i++) await fn(i)
  const samples: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await fn(i)
    samples.push(performance.now() - t0)
  }
  return stats(samples)
}

const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))

/** One report line: median and p99, and the ratio of medians against a baseline of the same run. */
export function line(label: string, s: Stats, baseline?: Stats, unit = 'ms'): string {
  // A baseline of zero (e.g. no long task at all) has no meaningful ratio.
  const ratio =
    baseline && baseline.median > 0
      ? `  ×${(s.median / baseline.median).toFixed(1)} baseline`
      : baseline
        ? `  (baseline ${f(baseline.median)} ${unit})`
        : ''
  return `${label.padEnd(58)} p50 ${f(s.median).padStart(7)} ${unit}   p99 ${f(s.p99).padStart(7)} ${unit}   (n=${s.n})${ratio}`
}

export function rate(label: string, count: number, ms: number): string {
  return `${label.padEnd(58)} ${Math.round((count / ms) * 1000)
    .toString()
    .padStart(7)} /s   (${count} in ${(ms / 1000).toFixed(2)} s)`
}

/** Rounds of a throughput measurement, per second: the median round, and every round. */
export function throughput(label: string, perSecond: readonly number[], what: string): string {
  const sorted = [...perSecond].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
  const all = perSecond.map((r) => Math.round(r)).join(', ')
  return `${label.padEnd(58)} ${Math.round(median).toString().padStart(7)} /s   (median of ${what}: ${all})`
}
