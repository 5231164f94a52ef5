import { z } from 'zod'
import { HEX_COLOR, LIMITS } from '../constants.ts'
import { cursor, finite, id, int, oneOf, params, text, writeParams } from './common.ts'
import { imageBase64 } from './images.ts'

/** Mind maps, nodes and edges (specification: Maps, Nodes, Edges). */

const title = text('title', LIMITS.mapTitle.min, LIMITS.mapTitle.max).describe("The map's name.")

const nodeText = (name: string) =>
  z
    .string({
      error: (i) => (i.input === undefined ? `${name} is required` : `${name} must be a string`),
    })
    .max(LIMITS.nodeText.max, {
      error: `${name} must be at most ${LIMITS.nodeText.max} characters (limit ${LIMITS.nodeText.max})`,
    })

const color = (name: string) =>
  z
    .string({ error: `${name} must be a # hex colour like #3b82f6` })
    .regex(HEX_COLOR, { error: `${name} must be a # hex colour like #3b82f6 or #f80` })

/** list_maps: every map of the organisation, most recently changed first. Read-only. */
export const list_maps = params({ cursor: cursor().optional() })

/** create_map: a new, empty map. Not idempotent. */
export const create_map = writeParams({ title })

/** rename_map: sets the title (1–200 characters, like create_map). 404 for a missing or foreign map. */
export const rename_map = writeParams({ mapId: id('mapId'), title })

/** get_map: the map with all its nodes and edges. 404 for a missing, deleted or foreign map. */
export const get_map = params({
  mapId: id('mapId'),
  limit: int('limit', LIMITS.mapPage.min, LIMITS.mapPage.max)
    .optional()
    .describe('Nodes and edges per page; the answer then has nextCursor.'),
  cursor: cursor().optional().describe('The nextCursor of the previous page.'),
})

/** delete_map: permanent; its nodes and edges go with it (published node images stay). */
export const delete_map = writeParams({ mapId: id('mapId') })

const nodeFields = {
  text: nodeText('text').describe("The node's text."),
  x: finite('x').optional().describe('Canvas x of the left edge, px.'),
  y: finite('y').optional().describe('Canvas y of the top edge, px.'),
  color: color('color').optional().describe('Fill, # hex.'),
}

/**
 * create_node: adds a node. Without x/y it is placed below the lowest node (a new column
 * at x 0). Not idempotent.
 */
export const create_node = writeParams({ mapId: id('mapId'), ...nodeFields })

/** create_nodes: 1–100 nodes in one call, all or none; returned in input order. */
export const create_nodes = writeParams({
  mapId: id('mapId'),
  nodes: z
    .array(z.strictObject(nodeFields), {
      error: (i) =>
        i.input === undefined
          ? 'nodes is required: an array of { text, x?, y?, color? }'
          : 'nodes must be an array of { text, x?, y?, color? }',
    })
    .describe('The nodes, in order.')
    .min(LIMITS.createNodes.min, {
      error: `nodes must hold ${LIMITS.createNodes.min}–${LIMITS.createNodes.max} nodes`,
    })
    .max(LIMITS.createNodes.max, {
      error: `nodes must hold ${LIMITS.createNodes.min}–${LIMITS.createNodes.max} nodes (limit ${LIMITS.createNodes.max} per call)`,
    }),
})

/** update_node: writes only the fields sent (at least one of text, x, y, color). */
export const update_node = writeParams({
  nodeId: id('nodeId'),
  text: nodeFields.text.optional(),
  x: nodeFields.x,
  y: nodeFields.y,
  color: nodeFields.color,
})

/**
 * set_node_image: validates the image from its bytes, publishes it at a permanent public
 * URL and sets the node's imageUrl. Each call publishes a new file.
 */
export const set_node_image = writeParams({ nodeId: id('nodeId'), imageBase64 })

/** clear_node_image: removes imageUrl from the node; the node stays and the file stays published. */
export const clear_node_image = writeParams({ nodeId: id('nodeId') })

/** delete_node: removes the node and every edge touching it. */
export const delete_node = writeParams({ nodeId: id('nodeId') })

const edgeFields = { sourceId: id('sourceId'), targetId: id('targetId') }

/** create_edge: connects two different nodes of the same map. Not idempotent. */
export const create_edge = writeParams({ mapId: id('mapId'), ...edgeFields })

/** create_edges: 1–200 edges in one call, all or none; returned in input order. */
export const create_edges = writeParams({
  mapId: id('mapId'),
  edges: z
    .array(z.strictObject(edgeFields), {
      error: (i) =>
        i.input === undefined
          ? 'edges is required: an array of { sourceId, targetId }'
          : 'edges must be an array of { sourceId, targetId }',
    })
    .describe('The edges, in order.')
    .min(LIMITS.createEdges.min, {
      error: `edges must hold ${LIMITS.createEdges.min}–${LIMITS.createEdges.max} edges`,
    })
    .max(LIMITS.createEdges.max, {
      error: `edges must hold ${LIMITS.createEdges.min}–${LIMITS.createEdges.max} edges (limit ${LIMITS.createEdges.max} per call)`,
    }),
})

/** delete_edge: removes one edge. */
export const delete_edge = writeParams({ edgeId: id('edgeId') })

export const EXPORT_FORMATS = ['mermaid', 'markdown', 'svg', 'png'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

/** export_map: the map as Mermaid, a Markdown outline, SVG or PNG (base64). Read-only. */
export const export_map = params({
  mapId: id('mapId'),
  format: oneOf('format', EXPORT_FORMATS).describe('png comes as base64.'),
  offset: int('offset', 0, Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('The nextOffset of a text export cut to fit.'),
})

/**
 * layout_map: moves every node into a tidy tree in one write. Idempotent. A rootNodeId not
 * on the map is a 404.
 */
export const layout_map = writeParams({
  mapId: id('mapId'),
  rootNodeId: id('rootNodeId').optional().describe("The first tree's root; default: every root."),
  direction: oneOf('direction', ['right', 'down']).optional().describe('Default right.'),
})
