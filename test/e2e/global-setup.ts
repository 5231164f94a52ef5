import { ensureBuilt } from '../../client/ensure-built.ts'

/**
 * The browser tests drive the built app the server serves: build it once, before any file
 * runs (and only if a source is newer than the build). A run filtered to other tests skips
 * this: Vitest starts every project's global setup, whatever the filter.
 */
export default async function setup(): Promise<void> {
  const filters = process.argv
    .slice(2)
    .filter((a) => !a.startsWith('-') && !['run', 'watch', 'bench', 'list'].includes(a))
  if (filters.length > 0 && !filters.some((f) => f.includes('e2e'))) return
  await ensureBuilt((line) => console.log(line))
}
