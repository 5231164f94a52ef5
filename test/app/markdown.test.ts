import { describe, expect, test } from 'vitest'
import { ownFileUrl, renderMarkdown, safeLink } from '../../client/src/ui/markdown.ts'

/** The Markdown renderer's rules on links and images (client/src/ui/markdown.ts, issue 32). */
describe('Markdown links and images', () => {
  const origin = 'https://board.example'

  test('a link goes only to http(s), mailto or a path here; script and data URLs are refused however they are spelled', () => {
    for (const ok of [
      'https://x.org/a',
      'http://x.org',
      'mailto:a@b.c',
      '/o/1/board',
      '#top',
      'docs/a.md',
    ])
      expect(safeLink(ok), ok).toBe(true)
    for (const bad of [
      'javascript:alert(1)',
      'JAVASCRIPT:alert(1)',
      'java\tscript:alert(1)',
      ' javascript:alert(1)',
      '\u0001javascript:alert(1)',
      'data:text/html,<script>',
      'vbscript:x',
      'file:///etc/passwd',
      '//evil.example/x',
    ])
      expect(safeLink(bad), JSON.stringify(bad)).toBe(false)
  })

  test("an image shows only from this service's /files/ URLs; any other is a link, never fetched", () => {
    expect(ownFileUrl('/files/public/o/1.png', origin)).toBe(true)
    expect(ownFileUrl(`${origin}/files/private/o/f/a.png?sig=x`, origin)).toBe(true)
    expect(ownFileUrl('https://evil.example/files/a.png', origin)).toBe(false)
    expect(ownFileUrl('/api/app/me', origin)).toBe(false)
    expect(ownFileUrl('//evil.example/files/a.png', origin)).toBe(false)
    const html = renderMarkdown(
      '![a](/files/public/o/1.png) ![b](https://evil.example/p.png)',
      origin,
    )
    expect(html).toContain('<img src="/files/public/o/1.png" alt="a" loading="lazy">')
    expect(html).not.toContain('<img src="https://evil.example')
    expect(html).toContain(
      '<a href="https://evil.example/p.png" target="_blank" rel="noopener noreferrer" class="md-image-link">b</a>',
    )
  })

  test('raw HTML is text, links open in a new tab without opener, task lists and highlighted code render', () => {
    const html = renderMarkdown(
      '<b onclick="x()">hi</b>\n\n[d](https://x.org)\n\n- [x] done\n- [ ] todo\n\n```js\nlet a = 1\n```',
      origin,
    )
    expect(html).toContain('&lt;b onclick=&quot;x()&quot;&gt;hi&lt;/b&gt;')
    expect(html).toContain(
      '<a href="https://x.org" target="_blank" rel="noopener noreferrer">d</a>',
    )
    expect(html).toContain('<input type="checkbox" class="md-task" disabled checked> done')
    expect(html).toContain('<input type="checkbox" class="md-task" disabled> todo')
    expect(html).toContain('<span class="hljs-keyword">let</span>')
  })
})
