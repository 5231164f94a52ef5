import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { mapDocName } from '../../shared/board-doc.ts'
import { mapDocMaps, readEdge } from '../../shared/map-doc.ts'
import { badRequest, notFound } from '../errors.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { ActionContext } from './context.ts'
import { indexItems, mapOfItem, presentEdge, writeMap } from './maps.ts'

interface EdgeInput {
  sourceId: string
  targetId: string
}

/** A node cannot connect to itself: refused before any lookup, whatever the ids. */
function refuseSelfEdge(edge: EdgeInput, where: string): void {
  if (edge.sourceId === edge.targetId) {
    throw badRequest(
      `${where}sourceId and ${where}targetId are the same node; an edge connects two different nodes`,
    )
  }
}

/** An end that is not a node of the map written to: explained once the write is over. */
class EndNotOnMap extends Error {
  readonly nodeId: string
  readonly param: string
  readonly elsewhere: string | undefined

  constructor(nodeId: string, param: string, elsewhere: string | undefined) {
    super(`${param} ${nodeId} is not on the map`)
    this.nodeId = nodeId
    this.param = param
    this.elsewhere = elsewhere
  }
}

/** Checks that both ends are nodes on this map (see explainEnds). */
async function checkEnds(
  ctx: ActionContext,
  w: WriteScope,
  edge: EdgeInput,
  where: string,
): Promise<void> {
  const nodes = mapDocMaps(w.doc).nodes
  for (const end of ['sourceId', 'targetId'] as const) {
    const nodeId = edge[end]
    if (nodes.has(nodeId)) continue
    const elsewhere = await mapOfItem(w.tx, ctx.orgId, nodeId, 'node')
    throw new EndNotOnMap(nodeId, `${where}${end}`, elsewhere)
  }
}

/**
 * Runs an edge write and turns an end not on the map into its answer: a node of another
 * map of the organisation is a wrong value (400); a node that is nowhere (or foreign) is a
 * 404. The other map is read after the write let go of its own (a read inside the write
 * would wait for it).
 */
async function explainEnds<T>(ctx: ActionContext, mapId: string, write: Promise<T>): Promise<T> {
  try {
    return await write
  } catch (error) {
    if (!(error instanceof EndNotOnMap)) throw error
    const { nodeId, param, elsewhere } = error
    // The index outlives deleted nodes: only a node still on the other map makes it a 400.
    if (
      elsewhere &&
      elsewhere !== mapId &&
      (await ctx.live.read(mapDocName(ctx.orgId, elsewhere), (doc) =>
        mapDocMaps(doc).nodes.has(nodeId),
      ))
    ) {
      throw badRequest(
        `${param} ${nodeId} is a node of another map; an edge connects two nodes on the same map`,
      )
    }
    throw notFound(`No node with ${param} ${nodeId} on map ${mapId}`)
  }
}

function addEdges(w: WriteScope, edges: readonly EdgeInput[]): string[] {
  const ids = edges.map(() => randomUUID())
  w.mutate((doc) => {
    const target = mapDocMaps(doc).edges
    edges.forEach((e, i) => {
      const m = new Y.Map<unknown>()
      m.set('sourceId', e.sourceId)
      m.set('targetId', e.targetId)
      target.set(ids[i] as string, m)
    })
  })
  return ids
}

function presentNew(w: WriteScope, mapId: string, id: string) {
  return presentEdge(mapId, readEdge(id, mapDocMaps(w.doc).edges.get(id) as Y.Map<unknown>))
}

/** create_edge: both nodes on that map, never a node to itself. Not idempotent. */
export async function create_edge(
  ctx: ActionContext,
  input: ActionInput<'create_edge'>,
): Promise<ActionResults['create_edge']> {
  refuseSelfEdge(input, '')
  return explainEnds(
    ctx,
    input.mapId,
    writeMap(ctx, input.mapId, async (w) => {
      await checkEnds(ctx, w, input, '')
      const [id] = addEdges(w, [input]) as [string]
      await indexItems(w.tx, ctx.orgId, input.mapId, 'edge', [id])
      return { edge: presentNew(w, input.mapId, id) }
    }),
  )
}

/** create_edges: 1–200 edges, all or none, returned in input order. */
export async function create_edges(
  ctx: ActionContext,
  input: ActionInput<'create_edges'>,
): Promise<ActionResults['create_edges']> {
  for (const [i, e] of input.edges.entries()) {
    refuseSelfEdge(e, `edges[${i}].`)
  }
  return explainEnds(
    ctx,
    input.mapId,
    writeMap(ctx, input.mapId, async (w) => {
      for (const [i, e] of input.edges.entries()) {
        await checkEnds(ctx, w, e, `edges[${i}].`)
      }
      const ids = addEdges(w, input.edges)
      await indexItems(w.tx, ctx.orgId, input.mapId, 'edge', ids)
      return { edges: ids.map((id) => presentNew(w, input.mapId, id)) }
    }),
  )
}

/** delete_edge: removes one edge; 404 for a missing or foreign one. */
export async function delete_edge(
  ctx: ActionContext,
  input: ActionInput<'delete_edge'>,
): Promise<ActionResults['delete_edge']> {
  const noEdge = () => notFound(`No edge with edgeId ${input.edgeId} in this organisation`)
  const mapId = await mapOfItem(ctx.db, ctx.orgId, input.edgeId, 'edge')
  if (!mapId) throw noEdge()
  return writeMap(ctx, mapId, async (w) => {
    if (!mapDocMaps(w.doc).edges.has(input.edgeId)) throw noEdge()
    w.mutate((doc) => mapDocMaps(doc).edges.delete(input.edgeId))
    return { ok: true as const }
  })
}
