import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { mapDocName } from '../../shared/board-doc.ts'
import { mapDocMaps } from '../../shared/map-doc.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

function node(fields: Record<string, unknown>): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  for (const [k, v] of Object.entries(fields)) m.set(k, v)
  return m
}

describe.each(STORAGES)("people's canvas edits follow the map rules (%s)", (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let mapId: string
  let live: LiveClient
  let other: LiveClient
  let seed: { id: string }[]

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ owner, agent } = await ownerWithAgent(server.url))
    mapId = (await agent.ok('create_map', { title: 'Plans' })).map.id
    seed = (await agent.ok('create_nodes', { mapId, nodes: [{ text: 'a' }, { text: 'b' }] })).nodes
    await agent.ok('create_edge', { mapId, sourceId: seed[0]?.id, targetId: seed[1]?.id })
    const token = await owner.syncToken()
    live = await connectProvider(server.url, mapDocName(owner.orgId, mapId), token)
    other = await connectProvider(server.url, mapDocName(owner.orgId, mapId), token)
  })
  afterAll(async () => {
    live.destroy()
    other.destroy()
    await server.close()
  })

  test('a node a person draws reaches agents by id, and moves the map to the top of list_maps', async () => {
    const older = (await agent.ok('create_map', { title: 'Newer than Plans' })).map.id
    const id = crypto.randomUUID()
    mapDocMaps(live.doc).nodes.set(
      id,
      node({ text: 'drawn by hand', x: 10, y: 20, color: '#ff0000' }),
    )
    const updated = await eventuallyAsync(async () => {
      const r = await agent.call('update_node', { nodeId: id, text: 'edited by an agent' })
      return r.status === 200 ? r.body.node : undefined
    })
    expect(updated).toMatchObject({ text: 'edited by an agent', x: 10, y: 20, color: '#ff0000' })
    const { maps } = await agent.ok('list_maps')
    expect(maps[0].id).toBe(mapId)
    expect(maps.map((m: { id: string }) => m.id)).toContain(older)
  })

  test.each([
    ['text over 4,000 characters', { text: 'x'.repeat(4001) }, /4000|4,000/],
    ['a colour that is not # hex', { color: 'red' }, /hex/],
    ['an imageUrl', { imageUrl: 'https://evil.example/x.png' }, /set_node_image/],
    ['a coordinate that is not a number', { x: 'left' }, /finite/],
  ])('%s is reverted on every replica and the person told why', async (_name, change, reason) => {
    const messages: string[] = []
    live.provider.on('stateless', ({ payload }: { payload: string }) =>
      messages.push(JSON.parse(payload).reason),
    )
    const target = mapDocMaps(live.doc).nodes.get(seed[0]?.id as string) as Y.Map<unknown>
    const before = target.toJSON()
    for (const [k, v] of Object.entries(change)) target.set(k, v)
    await eventually(() =>
      JSON.stringify(target.toJSON()) === JSON.stringify(before) ? true : undefined,
    )
    expect(
      mapDocMaps(other.doc)
        .nodes.get(seed[0]?.id as string)
        ?.toJSON(),
    ).toEqual(before)
    await eventually(() => messages.find((m) => reason.test(m)))
  })

  test('an edge to a node that does not exist, or from a node to itself, is reverted', async () => {
    const edges = mapDocMaps(live.doc).edges
    const dangling = crypto.randomUUID()
    const loop = crypto.randomUUID()
    edges.set(dangling, node({ sourceId: seed[0]?.id, targetId: crypto.randomUUID() }))
    edges.set(loop, node({ sourceId: seed[0]?.id, targetId: seed[0]?.id }))
    await eventually(() => (!edges.has(dangling) && !edges.has(loop) ? true : undefined))
    const { edges: stored } = await agent.ok('get_map', { mapId })
    expect(stored.map((e: { id: string }) => e.id)).not.toContain(dangling)
  })

  test('deleting a node on the canvas takes its edges with it, as delete_node does', async () => {
    const { nodes } = await agent.ok('create_nodes', {
      mapId,
      nodes: [{ text: 'hub' }, { text: 'spoke' }],
    })
    const { edge } = await agent.ok('create_edge', {
      mapId,
      sourceId: nodes[0].id,
      targetId: nodes[1].id,
    })
    await eventually(() => mapDocMaps(live.doc).edges.get(edge.id))
    mapDocMaps(live.doc).nodes.delete(nodes[0].id)
    await eventually(() => (mapDocMaps(other.doc).edges.has(edge.id) ? undefined : true))
    const map = await eventuallyAsync(async () => {
      const r = await agent.ok('get_map', { mapId })
      return r.nodes.some((n: { id: string }) => n.id === nodes[0].id) ? undefined : r
    })
    expect(map.edges.map((e: { id: string }) => e.id)).not.toContain(edge.id)
  })

  test('a map title over 200 characters is reverted', async () => {
    const meta = mapDocMaps(live.doc).meta
    meta.set('title', 't'.repeat(201))
    await eventually(() => (meta.get('title') === 'Plans' ? true : undefined))
    expect((await agent.ok('get_map', { mapId })).map.title).toBe('Plans')
  })
})
