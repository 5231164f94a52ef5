import { type Browser, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { validateImage } from '../../server/images/validate.ts'
import { type Agent, ownerWithAgent } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { gif, jpeg, png, toBase64, webp } from './fixtures.ts'

/**
 * The generated fixtures are real images: a real browser (Debian's Chromium) decodes each
 * at the size the validator proved, and shows a node image from its public URL.
 */
const FIXTURES = {
  'PNG (RGBA)': png({ width: 4, height: 3 }),
  'PNG (indexed)': png({ colorType: 3, bitDepth: 4, width: 9, height: 5 }),
  'PNG (grey 16-bit)': png({ colorType: 0, bitDepth: 16, width: 7, height: 6, idatChunks: 3 }),
  JPEG: jpeg({ width: 100, height: 60 }),
  'WebP (lossless)': webp.lossless(),
  'WebP (lossy)': webp.lossy(),
  'WebP (alpha)': webp.alpha(),
  'WebP (animated)': webp.animated(),
  GIF: gif({ width: 5, height: 4 }),
  'GIF (animated)': gif({ frames: 3, width: 40, height: 30 }),
}

describe('generated images in a real browser', () => {
  let browser: Browser
  let server: TestServer
  let agent: Agent
  let page: Page

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: ['--no-sandbox'],
    })
    page = await browser.newPage()
    server = await startServer('pglite')
    ;({ agent } = await ownerWithAgent(server.url))
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  test.each(Object.entries(FIXTURES))(
    '%s decodes at the size the validator proved',
    async (_, bytes) => {
      const check = validateImage(bytes)
      if (!check.ok) throw new Error(check.reason)
      const size = await page.evaluate(
        async (src) => {
          const img = new Image()
          img.src = src
          await img.decode()
          return [img.naturalWidth, img.naturalHeight]
        },
        `data:${check.image.mimeType};base64,${toBase64(bytes)}`,
      )
      expect(size).toEqual([check.image.width, check.image.height])
    },
  )

  test('the GIF encoder’s pixels come back exactly (its LZW stream is right)', async () => {
    const indices = await page.evaluate(
      async (src) => {
        const img = new Image()
        img.src = src
        await img.decode()
        const canvas = document.createElement('canvas')
        canvas.width = img.naturalWidth
        canvas.height = img.naturalHeight
        const ctx = canvas.getContext('2d') as CanvasRenderingContext2D
        ctx.drawImage(img, 0, 0)
        const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data
        const palette = ['0,0,0', '255,0,0', '0,255,0', '0,0,255']
        const out: number[] = []
        for (let i = 0; i < data.length; i += 4)
          out.push(palette.indexOf(`${data[i]},${data[i + 1]},${data[i + 2]}`))
        return out
      },
      `data:image/gif;base64,${toBase64(gif({ width: 120, height: 90 }))}`,
    )
    expect(indices).toEqual(Array.from({ length: 120 * 90 }, (_, i) => (i + (i >> 3)) % 4))
  })

  test('a node image is shown from its public URL', async () => {
    const { map } = await agent.ok('create_map', { title: 'Shown' })
    const { node } = await agent.ok('create_node', { mapId: map.id, text: 'picture' })
    const bytes = png({ width: 6, height: 2 })
    const { node: withImage } = await agent.ok('set_node_image', {
      nodeId: node.id,
      imageBase64: toBase64(bytes),
    })
    await page.goto(`${server.url}/healthz`)
    const size = await page.evaluate(async (src) => {
      const img = new Image()
      img.src = src
      await img.decode()
      return [img.naturalWidth, img.naturalHeight]
    }, `${server.url}${withImage.imageUrl}`)
    expect(size).toEqual([6, 2])
  })
})
