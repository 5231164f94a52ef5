import { readdir } from 'node:fs/promises'

/**
 * `npm run bench [names...]`: runs every test/bench/<name>.bench.ts suite (core first), or
 * only the named ones. Each suite measures its own baseline in the same run, because the
 * machine is shared and noisy: compare the ratios, not the raw milliseconds.
 */
const wanted = process.argv.slice(2)
const folder = new URL('./', import.meta.url)
const suites = (await readdir(folder))
  .filter((f) => f.endsWith('.bench.ts'))
  .map((f) => f.slice(0, -'.bench.ts'.length))
  .filter((name) => wanted.length === 0 || wanted.includes(name))
  .sort((a, b) => (a === 'core' ? -1 : b === 'core' ? 1 : a.localeCompare(b)))

process.env.LOG_LEVEL ??= 'error'
console.log(`Corkboard benchmarks — node ${process.version}, ${new Date().toISOString()}`)
for (const name of suites) {
  console.log(`\n## ${name}`)
  const suite = (await import(new URL(`./${name}.bench.ts`, folder).href)) as {
    run(log: (line: string) => void): Promise<void>
  }
  await suite.run((l) => console.log(l))
}
process.exit(0)
