import { Resvg } from '@resvg/resvg-js'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { HEX_COLOR } from '../../shared/constants.ts'
import type { StoredNode } from '../../shared/map-doc.ts'
import type { ExportFormat } from '../../shared/schemas/maps.ts'
import { badRequest } from '../errors.ts'
import { fits, jsonLength, roomFor } from './answer-budget.ts'
import type { ActionContext } from './context.ts'
import {
  type EdgeEnds,
  liveEdges,
  nodeBox,
  readingOrder,
  type SpanningForest,
  spanningForest,
} from './map-graph.ts'
import { get_map } from './maps.ts'

/**
 * export_map: a map in a format people take elsewhere. Every node's text is in every
 * format, escaped for it; the structure comes from the map's spanning forest (map-graph.ts).
 */

export interface MapContent {
  title: string
  nodes: StoredNode[]
  edges: EdgeEnds[]
}

export const EXPORT_TYPES: Record<ExportFormat, { mimeType: string; extension: string }> = {
  mermaid: { mimeType: 'text/vnd.mermaid', extension: 'mmd' },
  markdown: { mimeType: 'text/markdown', extension: 'md' },
  svg: { mimeType: 'image/svg+xml', extension: 'svg' },
  png: { mimeType: 'image/png', extension: 'png' },
}

/**
 * Text inside a quoted Mermaid label. Mermaid turns `#<code>;` into that character, so
 * whatever could end the label or be read as markup (`"`, `#` itself, `<`, `>`, `&`, and
 * `:`/`;`, which its style pre-pass reads) is written that way; a line break is `<br>`.
 */
export function mermaidText(text: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => line.replace(/["#<>&:;`]/g, (c) => `#${c.charCodeAt(0)};`))
    .join('<br>')
}

/**
 * Mermaid: a `mindmap` when the map is a forest of trees (its single tree's root at the
 * top, or the map's title above several trees), else a `flowchart` with every edge.
 */
export function toMermaid(map: MapContent, forest: SpanningForest): string {
  const ordered = [...map.nodes].sort(readingOrder)
  const key = new Map(ordered.map((n, i) => [n.id, `n${i + 1}`]))
  const byId = new Map(map.nodes.map((n) => [n.id, n]))
  const label = (id: string) => `${key.get(id)}["${mermaidText(byId.get(id)?.text ?? '')}"]`
  if (forest.isForest) {
    const lines = ['mindmap']
    const walk = (id: string, depth: number) => {
      lines.push(`${'  '.repeat(depth)}${label(id)}`)
      for (const c of forest.children.get(id) ?? []) walk(c, depth + 1)
    }
    if (forest.roots.length === 1) walk(forest.roots[0] as string, 1)
    else {
      lines.push(`  root["${mermaidText(map.title)}"]`)
      for (const r of forest.roots) walk(r, 2)
    }
    return `${lines.join('\n')}\n`
  }
  const lines = ['flowchart LR']
  for (const n of ordered) lines.push(`  ${label(n.id)}`)
  for (const e of liveEdges(map.nodes, map.edges)) {
    lines.push(`  ${key.get(e.sourceId)} --> ${key.get(e.targetId)}`)
  }
  for (const n of ordered) {
    if (n.color && HEX_COLOR.test(n.color)) lines.push(`  style ${key.get(n.id)} fill:${n.color}`)
  }
  return `${lines.join('\n')}\n`
}

/** Markdown text: every ASCII punctuation mark that Markdown might read is backslash-escaped. */
export function markdownText(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>&~"'=:]/g, (c) => `\\${c}`)
}

/**
 * A Markdown outline: the title as a heading, then nested bullets from each root (two
 * spaces a level). A node is written once, under the first parent the outline reaches; a
 * cycle is broken there. A line break in a node is a hard break (`\` at the line's end)
 * with the next line indented under the bullet.
 */
export function toMarkdown(map: MapContent, forest: SpanningForest): string {
  const byId = new Map(map.nodes.map((n) => [n.id, n]))
  const lines = [`# ${markdownText(map.title)}`, '']
  const walk = (id: string, depth: number) => {
    const indent = '  '.repeat(depth)
    const text = (byId.get(id)?.text ?? '').split(/\r\n|\r|\n/).map(markdownText)
    lines.push(`${indent}- ${text.join(`\\\n${indent}  `)}`)
    for (const c of forest.children.get(id) ?? []) walk(c, depth + 1)
  }
  for (const r of forest.roots) walk(r, 0)
  return `${lines.join('\n')}\n`
}

/** Characters XML 1.0 cannot hold at all (most C0 controls) become U+FFFD. */
export function xmlText(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters XML forbids, matched on purpose.
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
      .replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
  )
}

const DEFAULT_ACCENT = '#3b82f6'
const MARGIN = 40

/**
 * The canvas as SVG: each node a box where it stands (its colour as the top band, as the
 * canvas draws it), its text wrapped in lines, the edges as arrows between box centres
 * (drawn first, so boxes cover them). Images are not embedded.
 */
export function toSvg(map: MapContent): string {
  const drawn = map.nodes.map((n) => ({ node: n, box: nodeBox(n) }))
  const minX = Math.min(0, ...drawn.map((d) => d.node.x))
  const minY = Math.min(0, ...drawn.map((d) => d.node.y))
  const maxX = Math.max(0, ...drawn.map((d) => d.node.x + d.box.width))
  const maxY = Math.max(0, ...drawn.map((d) => d.node.y + d.box.height))
  const width = Math.ceil(maxX - minX + 2 * MARGIN)
  const height = Math.ceil(maxY - minY + 2 * MARGIN)
  const ox = MARGIN - minX
  const oy = MARGIN - minY
  const centre = new Map(
    drawn.map((d) => [
      d.node.id,
      { x: d.node.x + ox + d.box.width / 2, y: d.node.y + oy + d.box.height / 2 },
    ]),
  )
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="DejaVu Sans, Arial, Helvetica, sans-serif" font-size="14">`,
    `<title>${xmlText(map.title)}</title>`,
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#94a3b8"/></marker></defs>',
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
  ]
  for (const e of liveEdges(map.nodes, map.edges)) {
    const a = centre.get(e.sourceId)
    const b = centre.get(e.targetId)
    if (!a || !b) continue
    out.push(
      `<line x1="${a.x}" y1="${a.y}" x2="${b.x}" y2="${b.y}" stroke="#94a3b8" stroke-width="2" marker-end="url(#arrow)"/>`,
    )
  }
  for (const { node, box } of drawn) {
    const x = node.x + ox
    const y = node.y + oy
    const accent = node.color && HEX_COLOR.test(node.color) ? node.color : DEFAULT_ACCENT
    const lines = box.lines.map(
      (line, i) => `<tspan x="${x + 13}" y="${y + 26 + i * 20}">${xmlText(line)}</tspan>`,
    )
    out.push(
      `<g><rect x="${x}" y="${y}" width="${box.width}" height="${box.height}" rx="10" fill="#ffffff" stroke="#cbd5e1"/>`,
      `<rect x="${x}" y="${y}" width="${box.width}" height="4" fill="${accent}"/>`,
      `<text fill="#0f172a" xml:space="preserve">${lines.join('')}</text></g>`,
    )
  }
  out.push('</svg>')
  return `${out.join('\n')}\n`
}

/** The longest side a PNG export has; a larger drawing is scaled down to fit. */
const MAX_PNG_SIDE = 8192

/** The SVG drawing rasterised by resvg, as PNG bytes. */
export function toPng(svg: string): Buffer {
  const size = /width="(\d+)" height="(\d+)"/.exec(svg)
  const longest = Math.max(Number(size?.[1] ?? 0), Number(size?.[2] ?? 0))
  const resvg = new Resvg(svg, {
    fitTo:
      longest > MAX_PNG_SIDE
        ? Number(size?.[1]) >= Number(size?.[2])
          ? { mode: 'width', value: MAX_PNG_SIDE }
          : { mode: 'height', value: MAX_PNG_SIDE }
        : { mode: 'original' },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
  })
  return resvg.render().asPng()
}

/** The file's bytes in one of the export formats. */
export function exportBytes(map: MapContent, format: ExportFormat): Buffer {
  return format === 'png' ? toPng(toSvg(map)) : Buffer.from(exportContent(map, format), 'utf8')
}

/** The map as one of the export formats: its content as text, or base64 for a PNG. */
export function exportContent(map: MapContent, format: ExportFormat): string {
  switch (format) {
    case 'mermaid':
      return toMermaid(map, spanningForest(map.nodes, map.edges))
    case 'markdown':
      return toMarkdown(map, spanningForest(map.nodes, map.edges))
    case 'svg':
      return toSvg(map)
    case 'png':
      return toPng(toSvg(map)).toString('base64')
    default:
      throw new Error(`unknown export format ${format satisfies never}`)
  }
}

/** A map's title, nodes and edges, read as get_map reads them (404 for a missing or foreign map). */
export async function readMapContent(ctx: ActionContext, mapId: string): Promise<MapContent> {
  // The whole map, whatever the answer's budget: the export is what gets cut to fit.
  const map = await get_map({ ...ctx, budget: undefined }, { mapId })
  return {
    title: map.map.title,
    nodes: map.nodes.map((n) => ({ ...n, imageUrl: n.imageUrl ?? null })),
    edges: map.edges,
  }
}

/** export_map: read-only; the same map gives the same export. */
export async function export_map(
  ctx: ActionContext,
  input: ActionInput<'export_map'>,
): Promise<ActionResults['export_map']> {
  if (input.offset !== undefined && input.format === 'png') {
    throw badRequest('offset pages a text export (mermaid, markdown, svg); png comes whole')
  }
  const map = await readMapContent(ctx, input.mapId)
  const answer: ActionResults['export_map'] = {
    mapId: input.mapId,
    format: input.format,
    mimeType: EXPORT_TYPES[input.format].mimeType,
    content: exportContent(map, input.format),
  }
  if (input.format === 'png' || (input.offset === undefined && fits(ctx.budget, answer))) {
    return answer
  }
  // A text export cut to fit: whole lines, from `offset`, and where the next part starts.
  const offset = Math.min(input.offset ?? 0, answer.content.length)
  let content = answer.content.slice(offset)
  if (ctx.budget) {
    const room = roomFor(ctx.budget, { ...answer, content: '', nextOffset: offset })
    let end = content.length
    while (end > 0 && jsonLength(content.slice(0, end)) > room) {
      // The line before the one that ends at `end` (a line keeps its '\n').
      const shorter = content.lastIndexOf('\n', end - 2)
      end = shorter >= 0 ? shorter + 1 : Math.floor(end / 2)
    }
    content = content.slice(0, end)
  }
  const next = offset + content.length
  return {
    ...answer,
    content,
    nextOffset: next < answer.content.length ? next : null,
    ...(next < answer.content.length
      ? {
          note: `Characters ${offset}–${next} of ${answer.content.length} of the export fit the answer budget: call export_map with offset ${next} for the rest.`,
        }
      : {}),
  }
}
