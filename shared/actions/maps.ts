/** Mind maps, nodes, edges, and images (set_node_image, clear_node_image, attach_screenshot). */
export const mapActions = {} satisfies Record<string, never>

export type MapResults = Record<never, never>
