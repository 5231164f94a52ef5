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

const BOOT_PLACEHOLDER = '<!-- corkboard:boot -->'

/**
 * Writes the page's first script (src/boot/boot.ts) into index.html itself, where the
 * placeholder comment is, so it runs while the HTML is read: as a module script of its own
 * it would be bundled with the app and run only once all of the app's code had arrived.
 * The server allows it by the hash of its text (server/static.ts).
 */
function inlineBoot(): Plugin {
  return {
    name: 'corkboard-inline-boot',
    async transformIndexHtml(html) {
      const source = readFileSync(join(root, 'src/boot/boot.ts'), 'utf8')
      const compiled = await transformWithOxc(source, 'boot.ts', { lang: 'ts' })
      // A file that imports types only still reads as a module: it ends `export {};`.
      const code = compiled.code.replace(/^export \{\};?\s*$/m, '')
      if (/^\s*(import|export)\b/m.test(code)) {
        throw new Error('src/boot/boot.ts is written into the page: it may import types only')
      }
      if (!html.includes(BOOT_PLACEHOLDER)) throw new Error(`index.html lacks ${BOOT_PLACEHOLDER}`)
      // In a function of its own: a classic script's names would otherwise be globals.
      return html.replace(BOOT_PLACEHOLDER, `<script>(() => {\n${code}})()</script>`)
    },
  }
}

export default defineConfig({
  root,
  plugins: [react(), inlineBoot(), serviceWorker()],
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
