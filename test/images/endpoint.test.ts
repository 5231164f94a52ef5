import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { fileLinkSecret, signFileLink } from '../../server/files/links.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName, mapDocName } from '../../shared/doc-names.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import {
  Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  append,
  gif,
  jpeg,
  png,
  pngBomb,
  pngWithBadCrc,
  toBase64,
  truncate,
  webp,
} from './fixtures.ts'

/**
 * Images through the agent endpoint (specification: Images, Attachment): node images with
 * a permanent public URL, private card screenshots with short-lived signed links, and the
 * rules on how bytes are sent.
 */
describe.each(STORAGES)('images (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let stranger: Agent
  let strangerOwner: Person

  beforeAll(async () => {
    // The rate budgets are another module's rules; these tests send many images per minute.
    server = await startServer(kind, {
      rateLimitPerKey: 1_000_000,
      rateLimitImagesPerOrg: 1_000_000,
    })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    ;({ agent: stranger, owner: strangerOwner } = await ownerWithAgent(server.url))
  })
  afterAll(() => server.close())

  const get = (url: string, headers: Record<string, string> = {}) =>
    fetch(url.startsWith('http') ? url : `${server.url}${url}`, { headers })
  const newNode = async () => {
    const { map } = await agent.ok('create_map', { title: 'Pictures' })
    const { node } = await agent.ok('create_node', { mapId: map.id, text: 'with a picture' })
    return { map, node }
  }
  const newTask = async (who = agent) => {
    const { columns } = await who.ok('list_columns')
    return (await who.ok('create_task', { columnId: columns[0].id, title: 'Has screenshots' })).task
  }

  describe('how images are sent', () => {
    const rules: [string, (b64: string) => Record<string, unknown>, RegExp][] = [
      [
        'a data: prefix',
        (b) => ({ imageBase64: `data:image/png;base64,${b}` }),
        /without a "data:" prefix/,
      ],
      [
        'a newline',
        (b) => ({ imageBase64: `${b.slice(0, 8)}\n${b.slice(8)}` }),
        /no whitespace or newlines/,
      ],
      [
        'a space',
        (b) => ({ imageBase64: `${b.slice(0, 8)} ${b.slice(8)}` }),
        /no whitespace or newlines/,
      ],
      ['a tab at the end', (b) => ({ imageBase64: `${b}\t` }), /no whitespace or newlines/],
      [
        'a non-breaking space',
        (b) => ({ imageBase64: `${b.slice(0, 8)}\u00a0${b.slice(8)}` }),
        /no whitespace or newlines/,
      ],
      [
        'padding in the middle',
        (b) => ({ imageBase64: `${b.slice(0, 4)}====${b.slice(4)}` }),
        /not valid base64/,
      ],
      [
        'base64url characters',
        (b) => ({ imageBase64: b.replace(/[A-Z]/, '-') }),
        /not valid base64/,
      ],
      [
        'missing padding',
        (b) => ({ imageBase64: b.replace(/=+$/, '').slice(0, -1) }),
        /not valid base64/,
      ],
      [
        'a URL instead of bytes',
        () => ({ imageBase64: 'https://example.com/a.png' }),
        /never as URLs/,
      ],
      [
        'a url parameter',
        (b) => ({ imageBase64: b, url: 'https://example.com/a.png' }),
        /url is not a parameter of (set_node_image|attach_screenshot): images are sent as bytes in imageBase64/,
      ],
      [
        // The unknown parameter is what is wrong, not the missing bytes: it is named first.
        'only a url parameter',
        () => ({ url: 'https://example.com/a.png' }),
        /^url is not a parameter of (set_node_image|attach_screenshot): images are sent as bytes in imageBase64/,
      ],
      ['no image', () => ({}), /imageBase64 is required/],
      ['an empty string', () => ({ imageBase64: '' }), /imageBase64 is empty/],
    ]
    const b64 = toBase64(png({ width: 3, height: 3 }))

    test.each(rules)(
      'set_node_image refuses %s with a 400 naming the parameter',
      async (_, params, message) => {
        const { node } = await newNode()
        const res = await agent.call('set_node_image', { nodeId: node.id, ...params(b64) })
        expect(res.status).toBe(400)
        expect(res.body.error).toMatch(message)
      },
    )

    test.each(rules)(
      'attach_screenshot refuses %s with a 400 naming the parameter',
      async (_, params, message) => {
        const task = await newTask()
        const res = await agent.call('attach_screenshot', { taskId: task.id, ...params(b64) })
        expect(res.status).toBe(400)
        expect(res.body.error).toMatch(message)
        expect((await agent.ok('get_task', { taskId: task.id })).attachments).toEqual([])
      },
    )

    test('an image over 3 MB decoded is a 400 naming the limit; exactly 3 MB is judged on its bytes', async () => {
      const { node } = await newNode()
      const limit = 3 * 1024 * 1024
      const over = await agent.call('set_node_image', {
        nodeId: node.id,
        imageBase64: 'A'.repeat(((limit + 3) / 3) * 4),
      })
      expect(over.status).toBe(400)
      expect(over.body.error).toMatch(
        /decodes to 3145731 bytes; an image is at most 3 MB \(3145728 bytes\)/,
      )
      // A real PNG of exactly 3 MB: accepted (it fits), so the limit is on decoded bytes.
      const base = png({ width: 2, height: 2 })
      const padding = limit - base.length - 12
      const big = png({ width: 2, height: 2, extra: [['tEXt', new Array(padding).fill(0x41)]] })
      expect(big.length).toBe(limit)
      const ok = await agent.call('set_node_image', { nodeId: node.id, imageBase64: toBase64(big) })
      expect(ok.status, JSON.stringify(ok.body)).toBe(200)
    })

    test.each([
      ['truncated PNG', truncate(png(), 60), /not a valid PNG: the file is truncated/],
      ['PNG with a bad CRC', pngWithBadCrc(), /CRC of chunk IDAT/],
      ['PNG with trailing data', append(png(), [1, 2, 3]), /trailing data follow IEND/],
      ['decompression bomb', pngBomb(), /10,000,000,000 pixels; the limit is 50,000,000/],
      ['JPEG with a trailer', append(jpeg(), new Array(64).fill(7)), /64 bytes of trailing data/],
      ['GIF without its trailer', gif().slice(0, -1), /not a valid GIF/],
      ['WebP with a wrong RIFF size', append(webp.lossless(), [0, 0]), /trailing data/],
      [
        'SVG',
        new TextEncoder().encode('<svg xmlns="http://www.w3.org/2000/svg"></svg>'),
        /not a PNG, JPEG, WebP or GIF/,
      ],
    ])('a %s is a 400 that says what is wrong', async (_, bytes, message) => {
      const { node } = await newNode()
      const res = await agent.call('set_node_image', {
        nodeId: node.id,
        imageBase64: toBase64(bytes),
      })
      expect(res.status).toBe(400)
      expect(res.body.error).toMatch(/^imageBase64 is refused: /)
      expect(res.body.error).toMatch(message)
      const task = await newTask()
      const shot = await agent.call('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(bytes),
      })
      expect(shot.status).toBe(400)
      expect(shot.body.error).toMatch(message)
    })
  })

  describe('node images', () => {
    test.each([
      ['PNG', png(), 'image/png', 'png'],
      ['JPEG', jpeg(), 'image/jpeg', 'jpg'],
      ['WebP', webp.lossless(), 'image/webp', 'webp'],
      ['GIF', gif(), 'image/gif', 'gif'],
    ])(
      'set_node_image with a %s publishes it at a permanent public URL',
      async (_, bytes, mime, ext) => {
        const { map, node } = await newNode()
        const res = await agent.ok('set_node_image', {
          nodeId: node.id,
          imageBase64: toBase64(bytes),
        })
        expect(res.node).toMatchObject({ id: node.id, text: 'with a picture' })
        const url: string = res.node.imageUrl
        expect(url).toMatch(new RegExp(`^/files/public/${owner.orgId}/[0-9a-f-]{36}\\.${ext}$`))
        expect((await agent.ok('get_map', { mapId: map.id })).nodes[0].imageUrl).toBe(url)
        // Anyone can fetch it, without a key or a session.
        const file = await get(url)
        expect(file.status).toBe(200)
        expect(file.headers.get('content-type')).toBe(mime)
        expect(file.headers.get('x-content-type-options')).toBe('nosniff')
        expect(file.headers.get('cache-control')).toMatch(/public.*immutable/)
        expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes)
        const again = await get(url, { 'if-none-match': file.headers.get('etag') as string })
        expect(again.status).toBe(304)
      },
    )

    test('the format comes from the bytes: a JPEG named like a PNG is served as a JPEG', async () => {
      const { node } = await newNode()
      const { node: withImage } = await agent.ok('set_node_image', {
        nodeId: node.id,
        imageBase64: toBase64(jpeg()),
      })
      expect(withImage.imageUrl).toMatch(/\.jpg$/)
      expect((await get(withImage.imageUrl.replace(/\.jpg$/, '.png'))).status).toBe(404)
    })

    test('clear_node_image keeps the node and leaves the file published', async () => {
      const { map, node } = await newNode()
      const { node: withImage } = await agent.ok('set_node_image', {
        nodeId: node.id,
        imageBase64: toBase64(png()),
      })
      const cleared = (await agent.ok('clear_node_image', { nodeId: node.id })).node
      expect(cleared).toEqual({
        id: node.id,
        mapId: map.id,
        text: 'with a picture',
        x: node.x,
        y: node.y,
        color: null,
      })
      expect((await agent.ok('get_map', { mapId: map.id })).nodes).toEqual([cleared])
      expect((await get(withImage.imageUrl)).status).toBe(200)
    })

    test('a node image shows up on a connected canvas at once, and deleting its map keeps it published', async () => {
      const { map, node } = await newNode()
      const live = await connectProvider(
        server.url,
        mapDocName(owner.orgId, map.id),
        await owner.syncToken(),
      )
      let url = ''
      try {
        const res = await agent.ok('set_node_image', {
          nodeId: node.id,
          imageBase64: toBase64(gif()),
        })
        url = res.node.imageUrl
        const seen = await eventually(() => {
          const v = mapDocMaps(live.doc).nodes.get(node.id)?.get('imageUrl')
          return typeof v === 'string' ? v : undefined
        })
        expect(seen).toBe(url)
      } finally {
        live.destroy()
      }
      await agent.ok('delete_map', { mapId: map.id })
      expect((await get(url)).status).toBe(200)
    })

    test('set_node_image on a missing or foreign node is a 404 and stores nothing', async () => {
      const { node } = await newNode()
      const before = await countFiles()
      const foreign = await stranger.call('set_node_image', {
        nodeId: node.id,
        imageBase64: toBase64(png()),
      })
      expect(foreign.status).toBe(404)
      const missing = await agent.call('set_node_image', {
        nodeId: randomUUID(),
        imageBase64: toBase64(png()),
      })
      expect(missing.status).toBe(404)
      expect(await countFiles()).toBe(before)
    })

    test('a screenshot is never served at a public URL, even to someone who knows its id', async () => {
      const task = await newTask()
      const { attachment } = await agent.ok('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(png()),
      })
      expect((await get(`/files/public/${owner.orgId}/${attachment.id}.png`)).status).toBe(404)
    })
  })

  const countFiles = async () =>
    (await server.storage.db.query<{ n: number }>('select count(*)::int as n from files'))[0]?.n

  describe('card screenshots', () => {
    test('attach_screenshot stores the image privately: the reply carries no URL', async () => {
      const task = await newTask()
      const bytes = png({ width: 5, height: 5 })
      const { attachment } = await agent.ok('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(bytes),
        filename: 'login page',
      })
      expect(attachment).toEqual({
        id: expect.any(String),
        taskId: task.id,
        filename: 'login-page.png',
        mimeType: 'image/png',
        size: bytes.length,
        createdAt: expect.any(String),
      })
    })

    test('get_task lists each attachment with a 10-minute signed link and returns the bytes', async () => {
      const task = await newTask()
      const first = png({ width: 2, height: 2 })
      const second = webp.lossy()
      const a = (
        await agent.ok('attach_screenshot', { taskId: task.id, imageBase64: toBase64(first) })
      ).attachment
      const b = (
        await agent.ok('attach_screenshot', {
          taskId: task.id,
          imageBase64: toBase64(second),
          filename: 'b.png',
        })
      ).attachment
      const before = Date.now()
      const read = await agent.ok('get_task', { taskId: task.id })
      expect(read.task.imageCount).toBe(2)
      expect(read.attachments.map((x: { id: string }) => x.id)).toEqual([a.id, b.id])
      expect(read.attachments[1]).toMatchObject({ filename: 'b.webp', mimeType: 'image/webp' })
      for (const att of read.attachments) {
        const ttl = Date.parse(att.urlExpiresAt) - before
        expect(ttl).toBeGreaterThan(9 * 60_000)
        expect(ttl).toBeLessThanOrEqual(10 * 60_000 + 1000)
      }
      expect(read.images).toEqual([
        { attachmentId: a.id, mimeType: 'image/png', dataBase64: toBase64(first) },
        { attachmentId: b.id, mimeType: 'image/webp', dataBase64: toBase64(second) },
      ])
      const res = await get(read.attachments[0].url)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('image/png')
      expect(res.headers.get('x-content-type-options')).toBe('nosniff')
      expect(res.headers.get('cache-control')).toMatch(/^private, max-age=(59\d|600)$/)
      expect(res.headers.get('referrer-policy')).toBe('no-referrer')
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(first)
    })

    test('the card and its document carry the attachment', async () => {
      const task = await newTask()
      const live = await connectProvider(
        server.url,
        cardDocName(owner.orgId, task.id),
        await owner.syncToken(),
      )
      try {
        const { attachment } = await agent.ok('attach_screenshot', {
          taskId: task.id,
          imageBase64: toBase64(gif()),
          filename: 'anim.gif',
        })
        const entry = await eventually(() => cardMaps(live.doc).attachments.get(attachment.id))
        expect(entry.toJSON()).toEqual({
          taskId: task.id,
          filename: 'anim.gif',
          mimeType: 'image/gif',
          size: attachment.size,
          createdAt: attachment.createdAt,
        })
        const board = await agent.ok('get_board', { include: ['attachments'] })
        expect(board.tasks.find((t: { id: string }) => t.id === task.id).imageCount).toBe(1)
        const listed = board.attachments.find((x: { id: string }) => x.id === attachment.id)
        expect(listed).toMatchObject({
          ...attachment,
          url: expect.stringContaining('/files/private/'),
        })
        expect((await get(listed.url)).status).toBe(200)
      } finally {
        live.destroy()
      }
    })

    test('get_changes reports the attached screenshot', async () => {
      const { cursor } = await agent.ok('get_changes')
      const task = await newTask()
      const { attachment } = await agent.ok('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(png()),
      })
      // The cursor trails the present by about a second, so the change may take a moment to show.
      const ids = await eventuallyAsync(async () => {
        const res = await agent.ok('get_changes', { since: cursor })
        const listed = res.attachments.map((a: { id: string }) => a.id)
        return listed.includes(attachment.id) ? listed : undefined
      })
      expect(ids).toContain(attachment.id)
    })

    test('a claim does not block attach_screenshot', async () => {
      const task = await newTask()
      const holder = new Agent(server.url, await owner.createKey('holder'))
      await holder.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
      const res = await agent.call('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(png()),
        agentName: 'Other',
      })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
    })

    test('attaching to an archived card works; a missing or foreign card is a 404', async () => {
      const task = await newTask()
      await agent.ok('archive_task', { taskId: task.id })
      expect(
        (await agent.call('attach_screenshot', { taskId: task.id, imageBase64: toBase64(png()) }))
          .status,
      ).toBe(200)
      const foreign = await stranger.call('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(png()),
      })
      const missing = await stranger.call('attach_screenshot', {
        taskId: randomUUID(),
        imageBase64: toBase64(png()),
      })
      expect(foreign.status).toBe(404)
      expect(missing.status).toBe(404)
    })

    test.each([
      ['../../etc/passwd', 'etc-passwd.png'],
      ['C:\\Users\\me\\shot.exe', 'C-Users-me-shot.png'],
      ['Résumé (final) v2.jpeg', 'Resume-final-v2.png'],
      ['<script>alert(1)</script>', 'script-alert-1-script.png'],
      ['.hidden', 'hidden.png'],
      ['???', 'screenshot.png'],
      ['a'.repeat(100), `${'a'.repeat(96)}.png`],
    ])(
      'filename %j is reduced to safe characters with the extension of the bytes: %s',
      async (filename, stored) => {
        const task = await newTask()
        const { attachment } = await agent.ok('attach_screenshot', {
          taskId: task.id,
          imageBase64: toBase64(png()),
          filename,
        })
        expect(attachment.filename).toBe(stored)
      },
    )

    test('filename is 1–100 characters; outside that is a 400 naming the limit', async () => {
      const task = await newTask()
      for (const filename of ['', 'x'.repeat(101)]) {
        const res = await agent.call('attach_screenshot', {
          taskId: task.id,
          imageBase64: toBase64(png()),
          filename,
        })
        expect(res.status).toBe(400)
        expect(res.body.error).toMatch(/filename must be 1–100 characters/)
      }
      const omitted = await agent.ok('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(jpeg()),
      })
      expect(omitted.attachment.filename).toBe('screenshot.jpg')
    })
  })

  describe('signed links', () => {
    const linkFor = async () => {
      const task = await newTask()
      const { attachment } = await agent.ok('attach_screenshot', {
        taskId: task.id,
        imageBase64: toBase64(png()),
      })
      const { attachments } = await agent.ok('get_task', { taskId: task.id })
      return { attachment, url: new URL(attachments[0].url, server.url) }
    }

    test('a tampered signature, a missing one or another file’s id is refused', async () => {
      const { url, attachment } = await linkFor()
      const bad = new URL(url)
      bad.searchParams.set('sig', `${url.searchParams.get('sig')?.slice(0, -2)}xx`)
      expect((await get(bad.href)).status).toBe(403)
      const none = new URL(url)
      none.searchParams.delete('sig')
      expect((await get(none.href)).status).toBe(403)
      const longer = new URL(url)
      longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600))
      expect((await get(longer.href)).status).toBe(403)
      const other = await linkFor()
      const swapped = new URL(url.href.replace(attachment.id, other.attachment.id))
      expect((await get(swapped.href)).status).toBe(403)
    })

    test('no link works for another organisation', async () => {
      const { url } = await linkFor()
      // The same path under the stranger's organisation id: the signature binds the organisation.
      const moved = new URL(url.href.replace(owner.orgId, strangerOwner.orgId))
      expect((await get(moved.href)).status).toBe(403)
      // The stranger's own valid link cannot reach our file by swapping the file id in.
      const theirTask = await newTask(stranger)
      await stranger.ok('attach_screenshot', { taskId: theirTask.id, imageBase64: toBase64(gif()) })
      const theirs = new URL(
        (await stranger.ok('get_task', { taskId: theirTask.id })).attachments[0].url,
        server.url,
      )
      expect((await get(theirs.href)).status).toBe(200)
      const fileId = url.pathname.split('/')[4] as string
      const forged = new URL(theirs.href.replace(theirs.pathname.split('/')[4] as string, fileId))
      expect((await get(forged.href)).status).toBe(403)
    })

    test('links expire: a link signed eleven minutes ago is refused', async () => {
      const { attachment } = await linkFor()
      const secret = await fileLinkSecret(server.app.db)
      const old = signFileLink(
        secret,
        { publicUrl: undefined },
        { orgId: owner.orgId, id: attachment.id, filename: attachment.filename },
        Date.now() - 11 * 60_000,
      )
      const res = await get(old.url)
      expect(res.status).toBe(403)
      expect((await res.json()).error).toMatch(/expired/)
      const fresh = signFileLink(
        secret,
        { publicUrl: undefined },
        { orgId: owner.orgId, id: attachment.id, filename: attachment.filename },
      )
      expect((await get(fresh.url)).status).toBe(200)
    })

    test('a teammate opens a screenshot through a fresh link, and can delete it in the app', async () => {
      const { attachment, url } = await linkFor()
      const link = await owner.request(
        'GET',
        `/api/app/orgs/${owner.orgId}/attachments/${attachment.id}/link`,
      )
      expect(link.status).toBe(200)
      expect((await get(link.body.url)).status).toBe(200)
      expect(
        (
          await strangerOwner.request(
            'GET',
            `/api/app/orgs/${owner.orgId}/attachments/${attachment.id}/link`,
          )
        ).status,
      ).toBe(404)
      const del = await owner.request(
        'DELETE',
        `/api/app/orgs/${owner.orgId}/attachments/${attachment.id}`,
      )
      expect(del.status).toBe(204)
      expect((await get(url.href)).status).toBe(404)
      const read = await agent.ok('get_task', { taskId: attachment.taskId })
      expect(read).toMatchObject({ attachments: [], images: [], task: { imageCount: 0 } })
    })
  })
})

describe('image URLs with PUBLIC_URL set', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer('pglite', { publicUrl: 'https://corkboard.example/' })
  })
  afterAll(() => server.close())

  test('node images and screenshot links are absolute against PUBLIC_URL; the path is the same', async () => {
    const { agent, owner } = await ownerWithAgent(server.url)
    const { map } = await agent.ok('create_map', { title: 'Absolute' })
    const { node } = await agent.ok('create_node', { mapId: map.id, text: 'n' })
    const { node: withImage } = await agent.ok('set_node_image', {
      nodeId: node.id,
      imageBase64: toBase64(png()),
    })
    const url = new URL(withImage.imageUrl)
    expect(url.origin).toBe('https://corkboard.example')
    expect(url.pathname).toMatch(new RegExp(`^/files/public/${owner.orgId}/`))
    expect((await fetch(`${server.url}${url.pathname}`)).status).toBe(200)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 't' })
    await agent.ok('attach_screenshot', { taskId: task.id, imageBase64: toBase64(png()) })
    const link = new URL((await agent.ok('get_task', { taskId: task.id })).attachments[0].url)
    expect(link.origin).toBe('https://corkboard.example')
    expect((await fetch(`${server.url}${link.pathname}${link.search}`)).status).toBe(200)
  })
})
