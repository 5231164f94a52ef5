import { XMLParser, XMLValidator } from 'fast-xml-parser'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { nodeBox } from '../../server/actions/map-graph.ts'
import { checkPng, PNG_SIGNATURE } from '../../server/images/png.ts'
import { mapDocName } from '../../shared/board-doc.ts'
import { mapDocMaps, readNode } from '../../shared/map-doc.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { expectRefused } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** export_map and layout_map through the agent endpoint and the app's routes (issue 19). */

/** Node texts that every format must carry, whatever they hold. */
const AWKWARD = [
  'He said "hi" & <b>left</b>',
  '[brackets] (parens) {braces}',
  '#hash; a:b; `tick` \\ back',
  'line one\nline two',
  '*star* _under_ - dash | pipe',
  "> quote ~ émoji 🎉 'single'",
]

interface Node {
  id: string
  text: string
  x: number
  y: number
}

/** What Mermaid shows for a label: `#<code>;` is that character, `<br>` a line break. */
const mermaidShown = (s: string) =>
  s.replaceAll('<br>', '\n').replace(/#(\d+);/g, (_m, c) => String.fromCodePoint(Number(c)))

/** What Markdown shows: a backslash-escaped mark is the mark, a hard break a line break. */
const markdownShown = (s: string) =>
  s.replace(/\\\n\s*/g, '\n').replace(/\\([!-/:-@[-`{-~])/g, '$1')

describe.each(STORAGES)('export_map and layout_map (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let stranger: Agent

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 1_000_000 })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    ;({ agent: stranger } = await ownerWithAgent(server.url))
  })
  afterAll(() => server.close())

  /** A map of `texts` with `links` as edges between their indexes. */
  const mapOf = async (
    texts: readonly string[],
    links: readonly [number, number][],
    title = 'Plans',
    colors: (string | undefined)[] = [],
  ) => {
    const { map } = await agent.ok('create_map', { title })
    const { nodes } = await agent.ok('create_nodes', {
      mapId: map.id,
      nodes: texts.map((text, i) => ({
        text,
        x: (i % 3) * 300,
        y: Math.floor(i / 3) * 200,
        ...(colors[i] ? { color: colors[i] } : {}),
      })),
    })
    const ids: string[] = nodes.map((n: Node) => n.id)
    if (links.length > 0) {
      await agent.ok('create_edges', {
        mapId: map.id,
        edges: links.map(([s, t]) => ({ sourceId: ids[s], targetId: ids[t] })),
      })
    }
    return { mapId: map.id as string, ids }
  }
  const exported = async (mapId: string, format: string): Promise<string> => {
    const out = await agent.ok('export_map', { mapId, format })
    expect(out).toMatchObject({ mapId, format })
    return out.content
  }
  const positions = async (mapId: string) =>
    new Map<string, Node>(
      (await agent.ok('get_map', { mapId })).nodes.map((n: Node) => [n.id, n] as const),
    )

  describe('export_map', () => {
    test("every node's text, quotes, brackets, newlines, < and & included, is in every format", async () => {
      const { mapId } = await mapOf(AWKWARD, [
        [0, 1],
        [0, 2],
        [2, 3],
        [1, 4],
        [4, 5],
      ])
      const mermaid = mermaidShown(await exported(mapId, 'mermaid'))
      const markdown = markdownShown(await exported(mapId, 'markdown'))
      const svg = await exported(mapId, 'svg')
      expect(XMLValidator.validate(svg)).toBe(true)
      const texts = svgTexts(svg)
      for (const text of AWKWARD) {
        expect(mermaid, 'mermaid').toContain(text)
        expect(markdown, 'markdown').toContain(text)
        expect(texts, 'svg').toContain(text)
      }
      // Nothing of a label can close it early: no raw quote, bracket end or markup inside.
      const raw = await exported(mapId, 'mermaid')
      for (const line of raw.trimEnd().split('\n').slice(1)) {
        expect(line).toMatch(/^\s*n\d+\["[^"<>&#]*(?:(?:#\d+;|<br>)[^"<>&#]*)*"\]$/)
      }
    })

    test('mermaid is a mindmap when the map is a forest of trees, else a flowchart', async () => {
      const tree = await mapOf(
        ['Root', 'A', 'B', 'A1'],
        [
          [0, 1],
          [0, 2],
          [1, 3],
        ],
      )
      expect(await exported(tree.mapId, 'mermaid')).toBe(
        ['mindmap', '  n1["Root"]', '    n2["A"]', '      n4["A1"]', '    n3["B"]', ''].join('\n'),
      )
      // Two trees: the map's title holds them, as a mindmap has one root.
      const forest = await mapOf(['One', 'Two', 'One child'], [[0, 2]], 'Two trees')
      const two = await exported(forest.mapId, 'mermaid')
      expect(two.split('\n').slice(0, 2)).toEqual(['mindmap', '  root["Two trees"]'])
      expect(two).toContain('    n1["One"]\n      n3["One child"]\n    n2["Two"]')
      // A node with two parents, and a cycle: flowcharts, every edge drawn.
      const diamond = await mapOf(
        ['Top', 'L', 'R', 'Bottom'],
        [
          [0, 1],
          [0, 2],
          [1, 3],
          [2, 3],
        ],
      )
      const flow = await exported(diamond.mapId, 'mermaid')
      expect(flow.startsWith('flowchart LR\n')).toBe(true)
      expect(flow.match(/-->/g)).toHaveLength(4)
      const cycle = await mapOf(
        ['A', 'B'],
        [
          [0, 1],
          [1, 0],
        ],
      )
      expect(await exported(cycle.mapId, 'mermaid')).toMatch(
        /^flowchart LR\n[\s\S]*n1 --> n2\n {2}n2 --> n1\n$/,
      )
    })

    test('markdown is an outline: nested bullets from the roots, in reading order', async () => {
      const { mapId } = await mapOf(
        ['Root', 'A', 'B', 'A1', 'Loose'],
        [
          [0, 1],
          [0, 2],
          [1, 3],
        ],
      )
      expect(await exported(mapId, 'markdown')).toBe(
        ['# Plans', '', '- Root', '  - A', '    - A1', '  - B', '- Loose', ''].join('\n'),
      )
    })

    test('markdown breaks a cycle once: every node of it appears exactly once', async () => {
      const { mapId } = await mapOf(
        ['A', 'B', 'C', 'Tail'],
        [
          [0, 1],
          [1, 2],
          [2, 0],
          [2, 3],
        ],
      )
      expect(await exported(mapId, 'markdown')).toBe(
        ['# Plans', '', '- A', '  - B', '    - C', '      - Tail', ''].join('\n'),
      )
    })

    test('svg is well-formed XML drawing each node in its colour and each edge', async () => {
      const { mapId } = await mapOf(
        ['Red', 'Default', 'Green'],
        [
          [0, 1],
          [0, 2],
        ],
        'A & <b>',
        ['#ef4444', undefined, '#10b981'],
      )
      const svg = await exported(mapId, 'svg')
      expect(XMLValidator.validate(svg)).toBe(true)
      const doc = new XMLParser({
        ignoreAttributes: false,
        attributeNamePrefix: '',
        htmlEntities: true,
      }).parse(svg)
      expect(doc.svg.title).toBe('A & <b>')
      expect(doc.svg.line).toHaveLength(2)
      const fills = doc.svg.g.map((g: { rect: { fill: string }[] }) => g.rect[1]?.fill)
      expect(fills).toEqual(['#ef4444', '#3b82f6', '#10b981'])
      expect(svgTexts(svg).sort()).toEqual(['Default', 'Green', 'Red'])
    })

    test('png is the svg drawing rendered: PNG bytes of the same size', async () => {
      const { mapId } = await mapOf(['One', 'Two'], [[0, 1]])
      const svg = await exported(mapId, 'svg')
      const png = Buffer.from(await exported(mapId, 'png'), 'base64')
      expect([...png.subarray(0, 8)]).toEqual([...PNG_SIGNATURE])
      const size = checkPng(png, { maxPixels: 1e8, maxTotalPixels: 1e8 })
      const [, width, height] = /width="(\d+)" height="(\d+)"/.exec(svg) ?? []
      expect([size.width, size.height]).toEqual([Number(width), Number(height)])
      expect((await agent.ok('export_map', { mapId, format: 'png' })).mimeType).toBe('image/png')
    })

    test('an unknown format is a 400 naming format; a missing one too', async () => {
      const { mapId } = await mapOf(['One'], [])
      await expectRefused(agent, 'export_map', { mapId, format: 'pdf' }, 400, /format/)
      await expectRefused(agent, 'export_map', { mapId }, 400, /format is required/)
    })

    test("another organisation's map is a 404", async () => {
      const { mapId } = await mapOf(['Secret'], [])
      await expectRefused(stranger, 'export_map', { mapId, format: 'svg' }, 404, /mapId/)
    })
  })

  describe('layout_map', () => {
    test('a tidy tree: each level 220 px to the right, siblings 90 px apart, parents centred', async () => {
      const { mapId, ids } = await mapOf(
        ['Root', 'A', 'B', 'C', 'A1', 'A2'],
        [
          [0, 1],
          [0, 2],
          [0, 3],
          [1, 4],
          [1, 5],
        ],
      )
      const before = (await positions(mapId)).get(ids[0] as string) as Node
      const { nodes } = await agent.ok('layout_map', { mapId })
      expect(nodes).toHaveLength(6)
      const at = await positions(mapId)
      const p = (i: number) => at.get(ids[i] as string) as Node
      // The root stays where it was; the map grows from it.
      expect([p(0).x, p(0).y]).toEqual([before.x, before.y])
      for (const i of [1, 2, 3]) expect(p(i).x - p(0).x).toBe(220)
      for (const i of [4, 5]) expect(p(i).x - p(0).x).toBe(440)
      expect(p(5).y - p(4).y).toBe(90)
      expect(p(2).y - p(1).y).toBeGreaterThanOrEqual(90)
      expect(p(3).y - p(2).y).toBe(90)
      // A sits between its two children.
      expect(p(1).y).toBe((p(4).y + p(5).y) / 2)
      // The answer is what the map now holds.
      for (const n of nodes) expect(at.get(n.id)).toMatchObject({ x: n.x, y: n.y })
    })

    test('no two nodes overlap, whatever the graph: cycles, long texts, several roots', async () => {
      const texts = Array.from({ length: 14 }, (_, i) =>
        i % 4 === 0 ? `A long thought ${i} `.repeat(12) : `Node ${i}\nsecond line`,
      )
      const { mapId } = await mapOf(texts, [
        [0, 1],
        [0, 2],
        [1, 3],
        [3, 1],
        [2, 4],
        [5, 6],
        [6, 7],
        [7, 5],
        [8, 9],
        [8, 10],
        [10, 11],
        [4, 11],
      ])
      for (const direction of ['right', 'down']) {
        await agent.ok('layout_map', { mapId, direction })
        const nodes = [...(await positions(mapId)).values()]
        expect(nodes).toHaveLength(14)
        const boxes = nodes.map((n) => ({
          ...n,
          ...nodeBox({ ...n, color: null, imageUrl: null }),
        }))
        for (const a of boxes) {
          for (const b of boxes) {
            if (a.id >= b.id) continue
            const apart =
              a.x + a.width <= b.x ||
              b.x + b.width <= a.x ||
              a.y + a.height <= b.y ||
              b.y + b.height <= a.y
            expect(apart, `${direction}: ${a.text} / ${b.text}`).toBe(true)
          }
        }
      }
    })

    test('direction down swaps the axes: levels 90 px down, siblings 220 px across', async () => {
      const { mapId, ids } = await mapOf(
        ['Root', 'A', 'B'],
        [
          [0, 1],
          [0, 2],
        ],
      )
      await agent.ok('layout_map', { mapId, direction: 'down' })
      const at = await positions(mapId)
      const p = (i: number) => at.get(ids[i] as string) as Node
      expect(p(1).y - p(0).y).toBe(90)
      expect(p(2).y).toBe(p(1).y)
      expect(p(2).x - p(1).x).toBe(220)
    })

    test('rootNodeId roots the first tree there; a node not on the map is a 404 naming it', async () => {
      const { mapId, ids } = await mapOf(
        ['Top', 'Middle', 'Leaf'],
        [
          [0, 1],
          [1, 2],
        ],
      )
      await agent.ok('layout_map', { mapId, rootNodeId: ids[1] })
      const at = await positions(mapId)
      const p = (i: number) => at.get(ids[i] as string) as Node
      expect(p(2).x - p(1).x).toBe(220)
      // Top, which points to the new root, is a tree of its own beside it.
      expect(p(0).x).toBe(p(1).x)
      const other = await mapOf(['Elsewhere'], [])
      await expectRefused(
        agent,
        'layout_map',
        { mapId, rootNodeId: other.ids[0] },
        404,
        /rootNodeId/,
      )
      await expectRefused(stranger, 'layout_map', { mapId }, 404, /mapId/)
    })

    test('idempotent: laying out a tidy map again moves nothing', async () => {
      const { mapId } = await mapOf(
        ['Root', 'A', 'B', 'C'],
        [
          [0, 1],
          [0, 2],
          [2, 3],
        ],
      )
      const first = await agent.ok('layout_map', { mapId })
      const second = await agent.ok('layout_map', { mapId })
      expect(second).toEqual(first)
    })

    test('applied in one transaction: a provider on the map sees every node move at once', async () => {
      const { mapId, ids } = await mapOf(
        ['Root', 'A', 'B', 'C'],
        [
          [0, 1],
          [0, 2],
          [0, 3],
        ],
      )
      const live = await connectProvider(
        server.url,
        mapDocName(owner.orgId, mapId),
        await owner.syncToken(),
      )
      try {
        const updates: number[] = []
        live.doc.on('update', () => updates.push(1))
        const { nodes } = await agent.ok('layout_map', { mapId })
        const want = new Map<string, Node>(nodes.map((n: Node) => [n.id, n]))
        await eventually(() => {
          const map = mapDocMaps(live.doc).nodes
          return ids.every((id) => {
            const n = readNode(id, map.get(id) as never)
            return n.x === want.get(id)?.x && n.y === want.get(id)?.y
          })
            ? true
            : undefined
        })
        expect(updates).toHaveLength(1)
      } finally {
        live.destroy()
      }
    })
  })

  describe("the app's routes", () => {
    test('the export download answers the bytes, their type and the map title as file name', async () => {
      const { mapId } = await mapOf(['One', 'Two'], [[0, 1]], 'Q3 "plans": a/b')
      const cases = [
        ['mermaid', 'text/vnd.mermaid; charset=utf-8', 'mmd'],
        ['markdown', 'text/markdown; charset=utf-8', 'md'],
        ['svg', 'image/svg+xml', 'svg'],
        ['png', 'image/png', 'png'],
      ] as const
      for (const [format, type, ext] of cases) {
        const res = await fetch(
          `${server.url}/api/app/orgs/${owner.orgId}/maps/${mapId}/export?format=${format}`,
          { headers: { cookie: owner.cookie } },
        )
        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toBe(type)
        expect(res.headers.get('content-disposition')).toMatch(
          new RegExp(`^attachment; filename="Q3 plans a b\\.${ext}"; filename\\*=UTF-8''`),
        )
        const bytes = Buffer.from(await res.arrayBuffer())
        const agentCopy = await exported(mapId, format)
        expect(bytes.toString(format === 'png' ? 'base64' : 'utf8')).toBe(agentCopy)
      }
      const bad = await owner.request(
        'GET',
        `/api/app/orgs/${owner.orgId}/maps/${mapId}/export?format=doc`,
      )
      expect(bad.status).toBe(400)
      expect(bad.body.error).toMatch(/format/)
    })

    test('tidy up through the app moves the nodes as layout_map does', async () => {
      const { mapId, ids } = await mapOf(['Root', 'A'], [[0, 1]])
      const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/maps/${mapId}/layout`, {
        direction: 'right',
      })
      expect(res.status).toBe(200)
      const at = await positions(mapId)
      const root = at.get(ids[0] as string) as Node
      const child = at.get(ids[1] as string) as Node
      expect(child.x - root.x).toBe(220)
      expect(res.body.nodes).toHaveLength(2)
    })
  })
})

/** The text of each drawn node: its `<text>`'s lines, joined by line breaks. */
function svgTexts(svg: string): string[] {
  const doc = new XMLParser({
    ignoreAttributes: true,
    htmlEntities: true,
    parseTagValue: false,
    trimValues: false,
    isArray: (name) => name === 'g' || name === 'tspan',
  }).parse(svg)
  return doc.svg.g.map((g: { text: { tspan: unknown[] } }) =>
    g.text.tspan.map((t) => String(t)).join('\n'),
  )
}
