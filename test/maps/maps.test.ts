import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { mapDocName } from '../../shared/board-doc.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import {
  type Agent,
  connectProvider,
  drawNode,
  eventually,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { expectRefused } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** Maps, nodes and edges through the agent endpoint (specification: Maps, Nodes, Edges). */
describe.each(STORAGES)('mind maps (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  /** A second organisation, for the foreign-id rules. */
  let stranger: Agent

  beforeAll(async () => {
    // The rate budgets are another module's rules; these tests make many calls per minute.
    server = await startServer(kind, {
      rateLimitPerKey: 1_000_000,
      rateLimitImagesPerOrg: 1_000_000,
    })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    ;({ agent: stranger } = await ownerWithAgent(server.url))
  })
  afterAll(() => server.close())

  const newMap = async (title = 'Ideas') => (await agent.ok('create_map', { title })).map
  const expect400 = (action: string, params: unknown, message: RegExp) =>
    expectRefused(agent, action, params, 400, message)
  const expect404 = (who: Agent, action: string, params: unknown, message: RegExp) =>
    expectRefused(who, action, params, 404, message)

  describe('maps', () => {
    test('create_map returns the new, empty map and get_map reads it back', async () => {
      const map = await newMap('Roadmap')
      expect(map).toMatchObject({ id: expect.any(String), title: 'Roadmap' })
      expect(Date.parse(map.updatedAt)).not.toBeNaN()
      const read = await agent.ok('get_map', { mapId: map.id })
      expect(read).toEqual({ map, nodes: [], edges: [] })
    })

    test('list_maps shows id, title and updatedAt, most recently changed first', async () => {
      const { agent: fresh } = await ownerWithAgent(server.url)
      const a = (await fresh.ok('create_map', { title: 'A' })).map
      const b = (await fresh.ok('create_map', { title: 'B' })).map
      expect((await fresh.ok('list_maps')).maps.map((m: { id: string }) => m.id)).toEqual([
        b.id,
        a.id,
      ])
      await fresh.ok('create_node', { mapId: a.id, text: 'a change to A' })
      const { maps } = await fresh.ok('list_maps')
      expect(maps.map((m: { id: string }) => m.id)).toEqual([a.id, b.id])
      expect(Object.keys(maps[0]).sort()).toEqual(['id', 'title', 'updatedAt'])
      expect(maps[0].updatedAt > a.updatedAt).toBe(true)
    })

    test('the map title is 1–200 characters; outside that is a 400 naming the limit', async () => {
      await expect400('create_map', { title: '' }, /title must be 1–200 characters/)
      await expect400('create_map', { title: 'x'.repeat(201) }, /title .*limit 200/)
      await expect400('create_map', {}, /title is required/)
      expect((await agent.ok('create_map', { title: 'x'.repeat(200) })).map.title).toHaveLength(200)
    })

    test('rename_map changes the list and the document title, with the same bounds', async () => {
      const map = await newMap('Before')
      const live = await connectProvider(
        server.url,
        mapDocName(owner.orgId, map.id),
        await owner.syncToken(),
      )
      try {
        expect(mapDocMaps(live.doc).meta.get('title')).toBe('Before')
        const renamed = (await agent.ok('rename_map', { mapId: map.id, title: 'After' })).map
        expect(renamed).toMatchObject({ id: map.id, title: 'After' })
        await eventually(() =>
          mapDocMaps(live.doc).meta.get('title') === 'After' ? true : undefined,
        )
        const listed = (await agent.ok('list_maps')).maps.find(
          (m: { id: string }) => m.id === map.id,
        )
        expect(listed.title).toBe('After')
        await expect400('rename_map', { mapId: map.id, title: '' }, /title must be 1–200/)
        await expect400('rename_map', { mapId: map.id, title: 'y'.repeat(201) }, /limit 200/)
      } finally {
        live.destroy()
      }
    })

    test('a map of another organisation is a 404, exactly like a missing one', async () => {
      const map = await newMap()
      const missing = randomUUID()
      for (const [action, params] of [
        ['get_map', {}],
        ['rename_map', { title: 'mine now' }],
        ['delete_map', {}],
        ['create_node', { text: 'x' }],
        ['create_nodes', { nodes: [{ text: 'x' }] }],
        ['create_edge', { sourceId: randomUUID(), targetId: randomUUID() }],
        ['create_edges', { edges: [{ sourceId: randomUUID(), targetId: randomUUID() }] }],
      ] as const) {
        const foreign = await stranger.call(action, { mapId: map.id, ...params })
        const none = await stranger.call(action, { mapId: missing, ...params })
        expect(foreign.status, action).toBe(404)
        expect(foreign.body.error.replace(map.id, '<id>')).toBe(
          none.body.error.replace(missing, '<id>'),
        )
      }
      expect((await stranger.ok('list_maps')).maps).toEqual([])
      expect((await agent.ok('get_map', { mapId: map.id })).map.title).toBe('Ideas')
    })

    test('a malformed mapId is a 400 naming it', async () => {
      await expect400('get_map', { mapId: 'nope' }, /mapId must be a UUID/)
    })

    test('delete_map removes the map and everything on it, permanently', async () => {
      const map = await newMap('Doomed')
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: [{ text: 'a' }, { text: 'b' }],
      })
      const { edge } = await agent.ok('create_edge', {
        mapId: map.id,
        sourceId: nodes[0].id,
        targetId: nodes[1].id,
      })
      expect(await agent.ok('delete_map', { mapId: map.id })).toEqual({ ok: true })
      await expect404(agent, 'get_map', { mapId: map.id }, /No map/)
      await expect404(agent, 'delete_map', { mapId: map.id }, /No map/)
      await expect404(agent, 'update_node', { nodeId: nodes[0].id, text: 'x' }, /No node/)
      await expect404(agent, 'delete_edge', { edgeId: edge.id }, /No edge/)
      expect((await agent.ok('list_maps')).maps.map((m: { id: string }) => m.id)).not.toContain(
        map.id,
      )
      const stored = await server.storage.db.query(
        'select 1 from doc_updates where doc_name = $1',
        [mapDocName(owner.orgId, map.id)],
      )
      expect(stored).toHaveLength(0)
    })

    test('delete_map closes live connections to the map, which cannot reopen it', async () => {
      const map = await newMap()
      const name = mapDocName(owner.orgId, map.id)
      const live = await connectProvider(server.url, name, await owner.syncToken())
      try {
        const closed = new Promise<string>((resolve) =>
          live.provider.on('close', ({ event }: { event: { reason: string } }) =>
            resolve(event.reason),
          ),
        )
        await agent.ok('delete_map', { mapId: map.id })
        expect(await closed).toBe('This map was deleted')
      } finally {
        live.destroy()
      }
      await expect(connectProvider(server.url, name, await owner.syncToken())).rejects.toThrow(
        /authentication failed/,
      )
    })

    test('a live connection to a map that does not exist is refused', async () => {
      await expect(
        connectProvider(server.url, mapDocName(owner.orgId, randomUUID()), await owner.syncToken()),
      ).rejects.toThrow(/authentication failed/)
    })
  })

  describe('nodes', () => {
    test('create_node returns the node with its text, position and colour', async () => {
      const map = await newMap()
      const { node } = await agent.ok('create_node', {
        mapId: map.id,
        text: 'Idea',
        x: 220,
        y: -90.5,
        color: '#3b82f6',
      })
      expect(node).toEqual({
        id: expect.any(String),
        mapId: map.id,
        text: 'Idea',
        x: 220,
        y: -90.5,
        color: '#3b82f6',
      })
      expect((await agent.ok('get_map', { mapId: map.id })).nodes).toEqual([node])
    })

    test('a node sent without x and y goes below the lowest node, never on top of another', async () => {
      const map = await newMap()
      const first = (await agent.ok('create_node', { mapId: map.id, text: 'first' })).node
      expect([first.x, first.y, first.color]).toEqual([0, 0, null])
      await agent.ok('create_node', { mapId: map.id, text: 'low', x: 500, y: 300 })
      const next = (await agent.ok('create_node', { mapId: map.id, text: 'next' })).node
      expect([next.x, next.y]).toEqual([0, 390])
    })

    test('node text is at most 4,000 characters; longer is a 400 naming the limit', async () => {
      const map = await newMap()
      expect(
        (await agent.ok('create_node', { mapId: map.id, text: 'x'.repeat(4000) })).node.text,
      ).toHaveLength(4000)
      expect((await agent.ok('create_node', { mapId: map.id, text: '' })).node.text).toBe('')
      await expect400('create_node', { mapId: map.id, text: 'x'.repeat(4001) }, /text .*4000/)
      await expect400('create_node', { mapId: map.id }, /text is required/)
    })

    test('a colour must be # hex; any other value is a 400 naming color', async () => {
      const map = await newMap()
      for (const color of ['#abc', '#A1B2C3']) {
        expect(
          (await agent.ok('create_node', { mapId: map.id, text: 'c', color })).node.color,
        ).toBe(color)
      }
      for (const color of ['red', '3b82f6', '#12', '#12345g', 'rgb(0,0,0)', '#1234567', 12, null]) {
        await expect400(
          'create_node',
          { mapId: map.id, text: 'c', color },
          /color must be a # hex colour/,
        )
      }
    })

    test('coordinates must be numbers', async () => {
      const map = await newMap()
      await expect400(
        'create_node',
        { mapId: map.id, text: 't', x: '10' },
        /x must be a finite number/,
      )
    })

    test('create_nodes creates 1–100 nodes and returns them in input order', async () => {
      const map = await newMap()
      const input = Array.from({ length: 100 }, (_, i) => ({
        text: `n${i}`,
        x: (i % 10) * 220,
        y: Math.floor(i / 10) * 90,
      }))
      const { nodes } = await agent.ok('create_nodes', { mapId: map.id, nodes: input })
      expect(nodes.map((n: { text: string }) => n.text)).toEqual(input.map((n) => n.text))
      expect(nodes.map((n: { x: number; y: number }) => [n.x, n.y])).toEqual(
        input.map((n) => [n.x, n.y]),
      )
      expect(new Set(nodes.map((n: { id: string }) => n.id)).size).toBe(100)
      expect((await agent.ok('get_map', { mapId: map.id })).nodes).toHaveLength(100)
    })

    test('create_nodes outside 1–100 is a 400 naming the limit', async () => {
      const map = await newMap()
      await expect400('create_nodes', { mapId: map.id, nodes: [] }, /nodes must hold 1–100 nodes/)
      const many = Array.from({ length: 101 }, () => ({ text: 'x' }))
      await expect400('create_nodes', { mapId: map.id, nodes: many }, /limit 100 per call/)
      await expect400('create_nodes', { mapId: map.id }, /nodes is required/)
    })

    test('create_nodes is all or none: one bad node is a 400 naming it and nothing is written', async () => {
      const map = await newMap()
      const nodes = [{ text: 'ok' }, { text: 'ok' }, { text: 'ok' }, { text: 'bad', color: 'blue' }]
      await expect400(
        'create_nodes',
        { mapId: map.id, nodes },
        /nodes\[3\]\.color: color must be a # hex/,
      )
      await expect400(
        'create_nodes',
        { mapId: map.id, nodes: [{ text: 'a', size: 3 }] },
        /Unknown parameter "nodes\[0\]\.size"/,
      )
      expect((await agent.ok('get_map', { mapId: map.id })).nodes).toEqual([])
    })

    test('create_nodes without positions stacks the nodes 90 px apart', async () => {
      const map = await newMap()
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: [{ text: 'a' }, { text: 'b' }, { text: 'c' }],
      })
      expect(nodes.map((n: { y: number }) => n.y)).toEqual([0, 90, 180])
    })

    test('update_node writes only the fields sent', async () => {
      const map = await newMap()
      const { node } = await agent.ok('create_node', {
        mapId: map.id,
        text: 'keep',
        x: 1,
        y: 2,
        color: '#fff',
      })
      const moved = (await agent.ok('update_node', { nodeId: node.id, x: 50 })).node
      expect(moved).toEqual({ ...node, x: 50 })
      const recoloured = (
        await agent.ok('update_node', { nodeId: node.id, color: '#000000', text: 'new' })
      ).node
      expect(recoloured).toEqual({ ...node, x: 50, color: '#000000', text: 'new' })
      expect((await agent.ok('get_map', { mapId: map.id })).nodes).toEqual([recoloured])
    })

    test('update_node needs at least one field, and checks each like create_node', async () => {
      const map = await newMap()
      const { node } = await agent.ok('create_node', { mapId: map.id, text: 't' })
      await expect400('update_node', { nodeId: node.id }, /at least one of text, x, y, color/)
      await expect400('update_node', { nodeId: node.id, color: 'green' }, /color must be a # hex/)
      await expect400('update_node', { nodeId: node.id, text: 'x'.repeat(4001) }, /4000/)
      await expect400(
        'update_node',
        { nodeId: node.id, imageUrl: 'http://x' },
        /Unknown parameter "imageUrl"/,
      )
    })

    test('delete_node removes the node and the edges touching it, and only those', async () => {
      const map = await newMap()
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: [{ text: 'a' }, { text: 'b' }, { text: 'c' }],
      })
      const [a, b, c] = nodes
      const { edges } = await agent.ok('create_edges', {
        mapId: map.id,
        edges: [
          { sourceId: a.id, targetId: b.id },
          { sourceId: c.id, targetId: a.id },
          { sourceId: b.id, targetId: c.id },
        ],
      })
      expect(await agent.ok('delete_node', { nodeId: a.id })).toEqual({ ok: true })
      const after = await agent.ok('get_map', { mapId: map.id })
      expect(after.nodes.map((n: { id: string }) => n.id).sort()).toEqual([b.id, c.id].sort())
      expect(after.edges).toEqual([edges[2]])
      await expect404(agent, 'update_node', { nodeId: a.id, text: 'x' }, /No node with nodeId/)
      await expect404(agent, 'delete_node', { nodeId: a.id }, /No node/)
      await expect404(agent, 'delete_edge', { edgeId: edges[0].id }, /No edge/)
    })

    test('a node of another organisation is a 404, exactly like a missing one', async () => {
      const map = await newMap()
      const { node } = await agent.ok('create_node', { mapId: map.id, text: 'private thought' })
      const missing = randomUUID()
      for (const [action, params] of [
        ['update_node', { text: 'stolen' }],
        ['clear_node_image', {}],
        ['delete_node', {}],
      ] as const) {
        const foreign = await stranger.call(action, { nodeId: node.id, ...params })
        const none = await stranger.call(action, { nodeId: missing, ...params })
        expect(foreign.status, action).toBe(404)
        expect(foreign.body.error.replace(node.id, '<id>')).toBe(
          none.body.error.replace(missing, '<id>'),
        )
      }
      expect((await agent.ok('get_map', { mapId: map.id })).nodes[0].text).toBe('private thought')
    })
  })

  describe('edges', () => {
    const twoNodes = async () => {
      const map = await newMap()
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: [{ text: 'a' }, { text: 'b' }],
      })
      return { map, a: nodes[0], b: nodes[1] }
    }

    test('create_edge connects two nodes of the map', async () => {
      const { map, a, b } = await twoNodes()
      const { edge } = await agent.ok('create_edge', {
        mapId: map.id,
        sourceId: a.id,
        targetId: b.id,
      })
      expect(edge).toEqual({
        id: expect.any(String),
        mapId: map.id,
        sourceId: a.id,
        targetId: b.id,
      })
      expect((await agent.ok('get_map', { mapId: map.id })).edges).toEqual([edge])
    })

    test('a node cannot connect to itself', async () => {
      const { map, a } = await twoNodes()
      await expect400('create_edge', { mapId: map.id, sourceId: a.id, targetId: a.id }, /same node/)
    })

    test('both nodes must be on the same map: a node of another map is a 400', async () => {
      const { map, a } = await twoNodes()
      const other = await twoNodes()
      await expect400(
        'create_edge',
        { mapId: map.id, sourceId: a.id, targetId: other.b.id },
        /targetId .* is a node of another map/,
      )
      expect((await agent.ok('get_map', { mapId: map.id })).edges).toEqual([])
      await agent.ok('delete_node', { nodeId: other.b.id })
      await expect404(
        agent,
        'create_edge',
        { mapId: map.id, sourceId: a.id, targetId: other.b.id },
        /No node with targetId/,
      )
    })

    test('a node that does not exist (or is foreign) is a 404 naming the end', async () => {
      const { map, a } = await twoNodes()
      await expect404(
        agent,
        'create_edge',
        { mapId: map.id, sourceId: randomUUID(), targetId: a.id },
        /No node with sourceId/,
      )
      const theirs = (await stranger.ok('create_map', { title: 'theirs' })).map
      const { node } = await stranger.ok('create_node', { mapId: theirs.id, text: 'x' })
      await expect404(
        agent,
        'create_edge',
        { mapId: map.id, sourceId: a.id, targetId: node.id },
        /No node with targetId/,
      )
    })

    test('create_edges creates 1–200 edges, returned in input order', async () => {
      const map = await newMap()
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: Array.from({ length: 21 }, (_, i) => ({ text: `n${i}` })),
      })
      const input: { sourceId: string; targetId: string }[] = []
      for (let i = 0; i < 200; i++) {
        input.push({ sourceId: nodes[i % 20].id, targetId: nodes[20].id })
      }
      const { edges } = await agent.ok('create_edges', { mapId: map.id, edges: input })
      expect(
        edges.map((e: { sourceId: string; targetId: string }) => ({
          sourceId: e.sourceId,
          targetId: e.targetId,
        })),
      ).toEqual(input)
      expect((await agent.ok('get_map', { mapId: map.id })).edges).toHaveLength(200)
    })

    test('create_edges outside 1–200 is a 400 naming the limit', async () => {
      const { map, a, b } = await twoNodes()
      await expect400('create_edges', { mapId: map.id, edges: [] }, /edges must hold 1–200 edges/)
      const many = Array.from({ length: 201 }, () => ({ sourceId: a.id, targetId: b.id }))
      await expect400('create_edges', { mapId: map.id, edges: many }, /limit 200 per call/)
    })

    test('create_edges is all or none: one bad edge is refused naming it, nothing is written', async () => {
      const { map, a, b } = await twoNodes()
      await expect400(
        'create_edges',
        {
          mapId: map.id,
          edges: [
            { sourceId: a.id, targetId: b.id },
            { sourceId: b.id, targetId: b.id },
          ],
        },
        /edges\[1\]\.sourceId and edges\[1\]\.targetId are the same node/,
      )
      await expect404(
        agent,
        'create_edges',
        {
          mapId: map.id,
          edges: [
            { sourceId: a.id, targetId: b.id },
            { sourceId: a.id, targetId: randomUUID() },
          ],
        },
        /edges\[1\]\.targetId/,
      )
      await expect400(
        'create_edges',
        { mapId: map.id, edges: [{ sourceId: a.id, targetId: 'x' }] },
        /edges\[0\]\.targetId/,
      )
      expect((await agent.ok('get_map', { mapId: map.id })).edges).toEqual([])
    })

    test('delete_edge removes one edge; a missing or foreign edge is a 404', async () => {
      const { map, a, b } = await twoNodes()
      const { edges } = await agent.ok('create_edges', {
        mapId: map.id,
        edges: [
          { sourceId: a.id, targetId: b.id },
          { sourceId: b.id, targetId: a.id },
        ],
      })
      const foreign = await stranger.call('delete_edge', { edgeId: edges[0].id })
      expect(foreign.status).toBe(404)
      expect(await agent.ok('delete_edge', { edgeId: edges[0].id })).toEqual({ ok: true })
      await expect404(agent, 'delete_edge', { edgeId: edges[0].id }, /No edge with edgeId/)
      expect((await agent.ok('get_map', { mapId: map.id })).edges).toEqual([edges[1]])
    })
  })

  describe('live map documents', () => {
    test('a provider connected to a map sees create_nodes and create_edges as they happen', async () => {
      const map = await newMap('Live')
      const live = await connectProvider(
        server.url,
        mapDocName(owner.orgId, map.id),
        await owner.syncToken(),
      )
      try {
        const { nodes, edges } = mapDocMaps(live.doc)
        const { nodes: created } = await agent.ok('create_nodes', {
          mapId: map.id,
          nodes: [
            { text: 'one', x: 0, y: 0, color: '#f00' },
            { text: 'two', x: 220, y: 90 },
          ],
        })
        const seen = await eventually(() => (nodes.size === 2 ? nodes : undefined))
        expect(seen.get(created[0].id)?.toJSON()).toEqual({
          text: 'one',
          x: 0,
          y: 0,
          color: '#f00',
          imageUrl: null,
        })
        expect(seen.get(created[1].id)?.get('text')).toBe('two')
        const { edge } = await agent.ok('create_edge', {
          mapId: map.id,
          sourceId: created[0].id,
          targetId: created[1].id,
        })
        const e = await eventually(() => edges.get(edge.id))
        expect(e.toJSON()).toEqual({ sourceId: created[0].id, targetId: created[1].id })
        await agent.ok('delete_node', { nodeId: created[0].id })
        await eventually(() => (nodes.size === 1 && edges.size === 0 ? true : undefined))
      } finally {
        live.destroy()
      }
    })

    test('a node a person drew on the canvas can be read and changed by an agent', async () => {
      const map = await newMap('Shared')
      const live = await connectProvider(
        server.url,
        mapDocName(owner.orgId, map.id),
        await owner.syncToken(),
      )
      try {
        const id = randomUUID()
        drawNode(live.doc, id, 'drawn by hand')
        const read = await eventuallyAsync(async () => {
          const r = await agent.ok('get_map', { mapId: map.id })
          return r.nodes.length === 1 ? r : undefined
        })
        expect(read.nodes[0]).toMatchObject({ id, text: 'drawn by hand', x: 10, y: 20 })
        const { node } = await agent.ok('update_node', { nodeId: id, text: 'edited by an agent' })
        expect(node.text).toBe('edited by an agent')
        await eventually(() =>
          mapDocMaps(live.doc).nodes.get(id)?.get('text') === 'edited by an agent'
            ? true
            : undefined,
        )
      } finally {
        live.destroy()
      }
    })

    test('an API key may open its own organisation’s map document, never another’s', async () => {
      const map = await newMap()
      const live = await connectProvider(server.url, mapDocName(owner.orgId, map.id), agent.key)
      live.destroy()
      await expect(
        connectProvider(server.url, mapDocName(owner.orgId, map.id), stranger.key),
      ).rejects.toThrow(/authentication failed/)
    })
  })

  test('a parameter a map action does not take is a 400 naming it', async () => {
    await expect400('list_maps', { all: true }, /Unknown parameter "all"/)
    await expect400('create_map', { title: 't', color: '#fff' }, /Unknown parameter "color"/)
  })
})
