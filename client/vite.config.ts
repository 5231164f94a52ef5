import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import react from '@vitejs/plugin-react'
import { defineConfig, type Plugin, transformWithOxc } from 'vite'

const root = import.meta.dirname

/**
 * Emits /sw.js: the service worker with the list of every built file and a build id, so
 * each build is a new worker that keeps exactly that build's files for offline use.
 */
function serviceWorker(): Plugin {
  return {
    name: 'corkboard-service-worker',
    apply: 'build',
    async generateBundle(_options, bundle) {
      const built = Object.keys(bundle).filter((f) => !f.endsWith('.map') && f !== 'index.html')
      const publicFiles = readdirSync(join(root, 'public'))
      const assets = [...built, ...publicFiles].map((f) => `/${f}`).sort()
      const build = createHash('sha256').update(assets.join('\n')).digest('hex').slice(0, 12)
      const source = readFileSync(join(root, 'src/sw/service-worker.ts'), 'utf8')
        .replace("'__BUILD__'", JSON.stringify(build))
        .replace(
          'const ASSETS: string[] = []',
          `const ASSETS: string[] = ${JSON.stringify(assets)}`,
        )
      const { code } = await transformWithOxc(source, 'service-worker.ts', { lang: 'ts' })
      this.emitFile({ type: 'asset', fileName: 'sw.js', source: code })
    },
  }
}

export default defineConfig({
  root,
  plugins: [react(), serviceWorker()],
  // Module workers, so the copy's worker loads Yjs only when it needs it (a chunk of its own).
  worker: { format: 'es' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 700,
  },
  server: {
    // `npm run dev:client` talks to a server started with `npm start` on the default port.
    proxy: {
      '/api': 'http://127.0.0.1:8787',
      '/files': 'http://127.0.0.1:8787',
      '/sync': { target: 'ws://127.0.0.1:8787', ws: true },
    },
  },
})
