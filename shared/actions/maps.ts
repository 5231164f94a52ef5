import * as images from '../schemas/images.ts'
import * as maps from '../schemas/maps.ts'
import { outputs } from '../schemas/outputs.ts'
import { spec } from './spec.ts'

/** Mind maps, nodes, edges, and images (set_node_image, clear_node_image, attach_screenshot). */
export const mapActions = {
  list_maps: spec({
    input: maps.list_maps,
    output: outputs.list_maps,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'List the mind maps of the organisation (id, title, updatedAt), most recently changed first.',
  }),
  create_map: spec({
    input: maps.create_map,
    output: outputs.create_map,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description: 'Create a new, empty mind map with a title (1–200 characters).',
  }),
  rename_map: spec({
    input: maps.rename_map,
    output: outputs.rename_map,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Rename a mind map (title 1–200 characters).',
  }),
  get_map: spec({
    input: maps.get_map,
    output: outputs.get_map,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'Read a mind map with all its nodes (text, x, y, color, imageUrl) and edges (sourceId → targetId).',
  }),
  delete_map: spec({
    input: maps.delete_map,
    output: outputs.delete_map,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Delete a mind map permanently, with every node and edge on it.',
  }),
  create_node: spec({
    input: maps.create_node,
    output: outputs.create_node,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      'Add a node (a thought) to a map: x grows rightwards, y downwards; siblings read well about 220 px apart across and 90 px down. Without x/y it goes below the lowest node.',
  }),
  create_nodes: spec({
    input: maps.create_nodes,
    output: outputs.create_nodes,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      'Add 1–100 nodes to a map in one call (all or none); returned in input order, so pair ids with inputs by index.',
  }),
  update_node: spec({
    input: maps.update_node,
    output: outputs.update_node,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Change any of text, x, y, color of a node; only the fields sent are written.',
  }),
  set_node_image: spec({
    input: maps.set_node_image,
    output: outputs.set_node_image,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: false,
    description:
      'Put an image on a node (bytes in imageBase64, never resized). The image gets a permanent public URL (imageUrl). 30 per minute per organisation.',
  }),
  clear_node_image: spec({
    input: maps.clear_node_image,
    output: outputs.clear_node_image,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description:
      'Remove the image from a node. The node stays, and the published file stays reachable at its URL.',
  }),
  delete_node: spec({
    input: maps.delete_node,
    output: outputs.delete_node,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Delete a node and every edge touching it.',
  }),
  create_edge: spec({
    input: maps.create_edge,
    output: outputs.create_edge,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description: 'Connect two different nodes of the same map (sourceId → targetId).',
  }),
  create_edges: spec({
    input: maps.create_edges,
    output: outputs.create_edges,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description: 'Create 1–200 edges on a map in one call (all or none); returned in input order.',
  }),
  delete_edge: spec({
    input: maps.delete_edge,
    output: outputs.delete_edge,
    write: true,
    claimLocked: false,
    destructive: true,
    idempotent: true,
    description: 'Delete one edge.',
  }),
  export_map: spec({
    input: maps.export_map,
    output: outputs.export_map,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'Export a map: Mermaid (mindmap for a forest, else flowchart), a Markdown outline, SVG, or PNG.',
  }),
  layout_map: spec({
    input: maps.layout_map,
    output: outputs.layout_map,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description: 'Tidy a map: arrange every node as a tree from its roots, live.',
  }),
  attach_screenshot: spec({
    input: images.attach_screenshot,
    output: outputs.attach_screenshot,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      "Attach a screenshot to a card (bytes in imageBase64); works under anyone's claim. Stored privately: get_task returns short-lived links and the bytes. 30 per minute per organisation.",
  }),
} as const
