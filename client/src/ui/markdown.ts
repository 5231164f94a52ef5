import hljs from 'highlight.js/lib/core'
import bash from 'highlight.js/lib/languages/bash'
import css from 'highlight.js/lib/languages/css'
import diff from 'highlight.js/lib/languages/diff'
import go from 'highlight.js/lib/languages/go'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import python from 'highlight.js/lib/languages/python'
import rust from 'highlight.js/lib/languages/rust'
import sql from 'highlight.js/lib/languages/sql'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'
import MarkdownIt, { type MarkdownIt as Md } from 'markdown-it'

/**
 * Markdown as people read what agents write (descriptions and comments): CommonMark with
 * GFM tables, strikethrough and task lists, code blocks highlighted. Safe by construction:
 * raw HTML is shown as text (html: false), a link goes only to http(s), mailto or a path
 * on this service and opens in a new tab without an opener or a referrer, and an image
 * shows only from this service's own file URLs (/files/…); any other image is its link.
 */

for (const [name, lang] of Object.entries({
  bash,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
})) {
  hljs.registerLanguage(name, lang)
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

/** The schemes a link may use; anything else (javascript:, data:, vbscript:, file:) is text. */
const SAFE_SCHEME = /^(https?:|mailto:)/i
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:/i

/**
 * Whether a link's destination is safe to follow. Browsers drop tabs, newlines and
 * leading control characters before reading a scheme (`java\tscript:`), so those are
 * removed before it is judged; a destination without a scheme is a path here.
 */
export function safeLink(url: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: browsers drop these before the scheme
  const bare = url.replace(/[\u0000-\u0020\u007f-\u009f]/g, '')
  if (bare.startsWith('//')) return false
  if (SAFE_SCHEME.test(bare)) return true
  return !HAS_SCHEME.test(bare) && !bare.includes(':')
}

/** Whether an image's source is one of this service's own files (public or signed). */
export function ownFileUrl(src: string, origin: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: as safeLink
  const bare = src.replace(/[\u0000-\u0020\u007f-\u009f]/g, '')
  let url: URL
  try {
    url = new URL(bare, `${origin}/`)
  } catch {
    return false
  }
  return url.origin === origin && url.pathname.startsWith('/files/')
}

function build(origin: string): Md {
  const md = new MarkdownIt({
    html: false,
    linkify: true,
    breaks: true,
    highlight: (code, info) => {
      const lang = info.trim().split(/\s+/)[0]?.toLowerCase() ?? ''
      if (lang && hljs.getLanguage(lang)) {
        try {
          return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value
        } catch {
          return ''
        }
      }
      return ''
    },
  })
  md.validateLink = safeLink

  const rules = md.renderer.rules
  rules.link_open = (tokens, idx, options, _env, self) => {
    const token = tokens[idx]
    if (token) {
      token.attrSet('target', '_blank')
      token.attrSet('rel', 'noopener noreferrer')
    }
    return self.renderToken(tokens, idx, options)
  }
  rules.image = (tokens, idx, options, env, self) => {
    const token = tokens[idx]
    const src = String(token?.attrGet('src') ?? '')
    const alt = token ? self.renderInlineAsText(token.children ?? [], options, env) : ''
    if (ownFileUrl(src, origin)) {
      return `<img src="${escapeHtml(src)}" alt="${escapeHtml(alt)}" loading="lazy">`
    }
    // Not ours: never fetched (a tracking pixel, a request to anywhere); shown as a link.
    const label = escapeHtml(alt || src)
    if (!safeLink(src)) return label
    return `<a href="${escapeHtml(src)}" target="_blank" rel="noopener noreferrer" class="md-image-link">${label}</a>`
  }
  rules.task_checkbox = (tokens, idx) =>
    `<input type="checkbox" class="md-task" disabled${tokens[idx]?.meta?.checked ? ' checked' : ''}> `

  // Task lists: a list item whose text starts with [ ] or [x] shows a checkbox.
  md.core.ruler.after('inline', 'task_lists', (state) => {
    const tokens = state.tokens
    for (let i = 2; i < tokens.length; i++) {
      const inline = tokens[i]
      if (
        inline?.type !== 'inline' ||
        tokens[i - 1]?.type !== 'paragraph_open' ||
        tokens[i - 2]?.type !== 'list_item_open'
      )
        continue
      const first = inline.children?.[0]
      const m = first?.type === 'text' ? /^\[([ xX])\]\s+/.exec(first.content) : null
      if (!first || !m || !inline.children) continue
      first.content = first.content.slice(m[0].length)
      const box = new state.Token('task_checkbox', 'input', 0)
      box.meta = { checked: m[1] !== ' ' }
      inline.children.unshift(box)
      tokens[i - 2]?.attrJoin('class', 'md-task-item')
    }
  })
  return md
}

const renderers = new Map<string, Md>()

/** The text as safe HTML; `origin` is this service's, whose /files/ images may show. */
export function renderMarkdown(text: string, origin: string): string {
  let md = renderers.get(origin)
  if (!md) {
    md = build(origin)
    renderers.set(origin, md)
  }
  return md.render(text)
}
