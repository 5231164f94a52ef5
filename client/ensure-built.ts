import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = fileURLToPath(new URL('.', import.meta.url))
const repo = join(here, '..')

/** The newest modification time among the files the web app is built from. */
function newestSource(): number {
  let newest = 0
  const visit = (path: string) => {
    const info = statSync(path)
    if (info.isDirectory()) {
      for (const name of readdirSync(path)) visit(join(path, name))
    } else if (info.mtimeMs > newest) newest = info.mtimeMs
  }
  for (const p of [
    'client/src',
    'client/public',
    'client/index.html',
    'client/vite.config.ts',
    'shared',
  ]) {
    const full = join(repo, p)
    if (existsSync(full)) visit(full)
  }
  return newest
}

/**
 * Builds the web app unless client/dist is newer than every source file: `npm start` on a
 * fresh clone serves a built app, and a second start does not wait for a build.
 */
export async function ensureBuilt(log: (line: string) => void = console.log): Promise<void> {
  const index = join(here, 'dist', 'index.html')
  if (existsSync(index) && statSync(index).mtimeMs >= newestSource()) return
  log('Building the web app (client/dist)…')
  const { build } = await import('vite')
  // Vite keeps an inherited NODE_ENV (a test runner sets "test"), which would build React's
  // development bundle and leave the service worker out: this is always a production build.
  const previous = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  try {
    await build({ configFile: join(here, 'vite.config.ts'), mode: 'production', logLevel: 'warn' })
  } finally {
    if (previous === undefined) delete process.env.NODE_ENV
    else process.env.NODE_ENV = previous
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await ensureBuilt()
}
