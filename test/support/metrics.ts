import parsePrometheusTextFormat, {
  type ParsedFamily,
  type ParsedSample,
} from 'parse-prometheus-text-format'

/** A token long enough for METRICS_TOKEN. */
export const METRICS_TOKEN = 'test-metrics-token-0123456789'

/** One scrape of /metrics, read with a Prometheus text-format parser. */
export class Scrape {
  readonly families: ReadonlyMap<string, ParsedFamily>

  constructor(text: string) {
    this.families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]))
  }

  /** The samples of a family whose labels include `labels`. */
  samples(name: string, labels: Record<string, string> = {}): ParsedSample[] {
    const family = this.families.get(name)
    if (!family) return []
    return family.metrics.filter((m) =>
      Object.entries(labels).every(([k, v]) => m.labels?.[k] === v),
    )
  }

  /** The sum of a counter's or gauge's matching samples (0 when none). */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((sum, m) => sum + Number(m.value ?? 0), 0)
  }

  /** How many observations a histogram's matching series hold. */
  count(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((sum, m) => sum + Number(m.count ?? 0), 0)
  }

  /** Every value one label takes in a family. */
  labelValues(name: string, label: string): Set<string> {
    return new Set(this.samples(name).flatMap((m) => (m.labels?.[label] ? [m.labels[label]] : [])))
  }
}

export async function scrape(url: string, token = METRICS_TOKEN): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } })
  if (res.status !== 200) throw new Error(`/metrics → ${res.status} ${await res.text()}`)
  return new Scrape(await res.text())
}
