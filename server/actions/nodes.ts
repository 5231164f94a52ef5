import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { mapDocMaps, readNode } from '../../shared/map-doc.ts'
import { badRequest, notFound } from '../errors.ts'
import { storeImage } from '../files/attachments.ts'
import { publicFilePath } from '../files/links.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { ActionContext } from './context.ts'
import { acceptImage } from './images.ts'
import { indexItems, mapOfItem, presentNode, writeMap } from './maps.ts'

/** Vertical gap between a node placed without y and the lowest node (the spec's advice). */
const ROW_GAP = 90

interface NodeFields {
  text: string
  x?: number | undefined
  y?: number | undefined
  color?: string | undefined
}

/**
 * Adds nodes in one document transaction, in input order. A node sent without y goes one
 * row below the lowest node so far (x 0 without x), so unplaced nodes never pile up.
 */
function addNodes(w: WriteScope, fields: readonly NodeFields[]): string[] {
  const nodes = mapDocMaps(w.doc).nodes
  let lowest = Number.NEGATIVE_INFINITY
  nodes.forEach((m) => {
    const y = m.get('y')
    if (typeof y === 'number' && Number.isFinite(y) && y > lowest) lowest = y
  })
  const ids = fields.map(() => randomUUID())
  w.mutate((doc) => {
    const target = mapDocMaps(doc).nodes
    fields.forEach((f, i) => {
      const y = f.y ?? (lowest === Number.NEGATIVE_INFINITY ? 0 : lowest + ROW_GAP)
      if (y > lowest) lowest = y
      const m = new Y.Map<unknown>()
      m.set('text', f.text)
      m.set('x', f.x ?? 0)
      m.set('y', y)
      m.set('color', f.color ?? null)
      m.set('imageUrl', null)
      target.set(ids[i] as string, m)
    })
  })
  return ids
}

function nodeOf(w: WriteScope, nodeId: string): Y.Map<unknown> | undefined {
  return mapDocMaps(w.doc).nodes.get(nodeId)
}

const noNode = (nodeId: string) => notFound(`No node with nodeId ${nodeId} in this organisation`)

/** Finds the node's map through the index, then writes on that map with the node in hand. */
async function writeNode<T>(
  ctx: ActionContext,
  nodeId: string,
  fn: (w: WriteScope, node: Y.Map<unknown>, mapId: string) => Promise<T>,
): Promise<T> {
  const mapId = await mapOfItem(ctx.db, ctx.orgId, nodeId, 'node')
  if (!mapId) throw noNode(nodeId)
  return writeMap(ctx, mapId, async (w) => {
    const node = nodeOf(w, nodeId)
    if (!node) throw noNode(nodeId)
    return fn(w, node, mapId)
  })
}

/** create_node: not idempotent; placed below the lowest node when x/y are left out. */
export async function create_node(
  ctx: ActionContext,
  input: ActionInput<'create_node'>,
): Promise<ActionResults['create_node']> {
  return writeMap(ctx, input.mapId, async (w) => {
    const [id] = addNodes(w, [input]) as [string]
    await indexItems(w.tx, ctx.orgId, input.mapId, 'node', [id])
    return {
      node: presentNode(ctx.config, input.mapId, readNode(id, nodeOf(w, id) as Y.Map<unknown>)),
    }
  })
}

/** create_nodes: 1–100 nodes, all or none, returned in input order. */
export async function create_nodes(
  ctx: ActionContext,
  input: ActionInput<'create_nodes'>,
): Promise<ActionResults['create_nodes']> {
  return writeMap(ctx, input.mapId, async (w) => {
    const ids = addNodes(w, input.nodes)
    await indexItems(w.tx, ctx.orgId, input.mapId, 'node', ids)
    return {
      nodes: ids.map((id) =>
        presentNode(ctx.config, input.mapId, readNode(id, nodeOf(w, id) as Y.Map<unknown>)),
      ),
    }
  })
}

/** update_node: writes only the fields sent; at least one of text, x, y, color. */
export async function update_node(
  ctx: ActionContext,
  input: ActionInput<'update_node'>,
): Promise<ActionResults['update_node']> {
  const { nodeId, text, x, y, color } = input
  if ([text, x, y, color].every((v) => v === undefined)) {
    throw badRequest('update_node needs at least one of text, x, y, color')
  }
  return writeNode(ctx, nodeId, async (w, node, mapId) => {
    w.mutate(() => {
      if (text !== undefined) node.set('text', text)
      if (x !== undefined) node.set('x', x)
      if (y !== undefined) node.set('y', y)
      if (color !== undefined) node.set('color', color)
    })
    return { node: presentNode(ctx.config, mapId, readNode(nodeId, node)) }
  })
}

/**
 * set_node_image: the bytes are proved an image before anything is written, stored as a
 * public file in the same transaction as the node's new imageUrl, and never deleted.
 */
export async function set_node_image(
  ctx: ActionContext,
  input: ActionInput<'set_node_image'>,
): Promise<ActionResults['set_node_image']> {
  const { bytes, image } = acceptImage(input.imageBase64)
  const orgId = ctx.orgId
  return writeNode(ctx, input.nodeId, async (w, node, mapId) => {
    const fileId = randomUUID()
    await storeImage(ctx.db, w.tx, {
      id: fileId,
      orgId,
      visibility: 'public',
      image,
      bytes,
      createdAt: w.now,
    })
    w.mutate(() => node.set('imageUrl', publicFilePath(orgId, fileId, image.extension)))
    return { node: presentNode(ctx.config, mapId, readNode(input.nodeId, node)) }
  })
}

/** clear_node_image: the node stays; the published file stays reachable at its URL. */
export async function clear_node_image(
  ctx: ActionContext,
  input: ActionInput<'clear_node_image'>,
): Promise<ActionResults['clear_node_image']> {
  return writeNode(ctx, input.nodeId, async (w, node, mapId) => {
    if (node.get('imageUrl') !== null) w.mutate(() => node.set('imageUrl', null))
    return { node: presentNode(ctx.config, mapId, readNode(input.nodeId, node)) }
  })
}

/** delete_node: the node and every edge touching it go together. */
export async function delete_node(
  ctx: ActionContext,
  input: ActionInput<'delete_node'>,
): Promise<ActionResults['delete_node']> {
  return writeNode(ctx, input.nodeId, async (w) => {
    const edges = mapDocMaps(w.doc).edges
    const touching: string[] = []
    edges.forEach((m, id) => {
      if (m.get('sourceId') === input.nodeId || m.get('targetId') === input.nodeId) {
        touching.push(id)
      }
    })
    w.mutate((doc) => {
      const maps = mapDocMaps(doc)
      for (const id of touching) maps.edges.delete(id)
      maps.nodes.delete(input.nodeId)
    })
    return { ok: true as const }
  })
}
