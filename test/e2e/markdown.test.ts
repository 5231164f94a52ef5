import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { STORAGES } from '../support/storage.ts'
import { card, openBoard, serverAndBrowser, signedInContext, watchErrors } from './support.ts'

/**
 * Descriptions and comments are Markdown, shown safely (issue 32): what an agent writes
 * renders as headings, lists, task lists, tables, highlighted code and links, and nothing
 * it writes runs: no raw HTML, no script URLs, no event attributes, no foreign images.
 */

/** The usual payloads; each one, if it ran, would set window.__xss to its number. */
const PAYLOADS = [
  '<script>window.__xss=1</script>',
  '<img src=x onerror="window.__xss=2">',
  '[plain](javascript:window.__xss=3)',
  '[mixed case](JaVaScRiPt:window.__xss=4)',
  '[tab entity](java&#x09;script:window.__xss=5)',
  '[char entity](&#106;avascript:window.__xss=6)',
  '<svg onload="window.__xss=7"><circle r="5"/></svg>',
  '![image script](javascript:window.__xss=8)',
  '[data url](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9OTwvc2NyaXB0Pg==)',
  '<a href="javascript:window.__xss=10">raw anchor</a>',
  '<javascript:window.__xss=11>',
  '```\n</code></pre><script>window.__xss=12</script>\n```',
  '```"><img src=x onerror=window.__xss=13>\ncode\n```',
  '<iframe src="javascript:window.__xss=14"></iframe>',
  '[angle](<javascript:window.__xss=15>)',
  '[reference][r]\n\n[r]: javascript:window.__xss=16',
  '![alt" onerror="window.__xss=17](/files/public/x/y.png)',
  '[title](https://example.org "t\\" onmouseover=\\"window.__xss=18")',
  '<details open ontoggle="window.__xss=19">x</details>',
  '[vb](vbscript:msgbox(20))',
  '[spaced]( javascript:window.__xss=21)',
  '<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=22>',
  '&lt;script&gt;window.__xss=23&lt;/script&gt;',
  '[newline](java\nscript:window.__xss=24)',
  '<div style="background:url(javascript:window.__xss=25)">styled</div>',
  '[protocol relative](//evil.example/steal)',
].join('\n\n')

async function assertNothingRan(page: Page, scope: ReturnType<Page['locator']>) {
  // Hover and focus every element: an onmouseover or onfocus payload would fire now.
  for (const el of await scope.locator('*').all()) await el.hover({ force: true }).catch(() => {})
  expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
  const found = await scope.evaluate((root) => {
    const all = [root, ...root.querySelectorAll('*')]
    return {
      handlers: all.flatMap((el) =>
        [...el.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${el.tagName} ${a.name}`),
      ),
      dangerous: [
        ...root.querySelectorAll('script,iframe,svg,math,object,embed,style,details,form'),
      ].map((el) => el.tagName),
      styled: all.filter((el) => el.hasAttribute('style')).length,
      hrefs: [...root.querySelectorAll('a')].map((a) => ({
        href: a.getAttribute('href') ?? '',
        target: a.getAttribute('target'),
        rel: a.getAttribute('rel'),
      })),
      images: [...root.querySelectorAll('img')].map((i) => i.getAttribute('src') ?? ''),
    }
  })
  expect(found.handlers).toEqual([])
  expect(found.dangerous).toEqual([])
  expect(found.styled).toBe(0)
  for (const a of found.hrefs) {
    expect(a.href).toMatch(/^(https?:\/\/|mailto:|\/[^/]|#)/)
    expect(a).toMatchObject({ target: '_blank', rel: 'noopener noreferrer' })
  }
  for (const src of found.images) expect(src).toMatch(/^\/files\//)
}

describe.each(STORAGES)('Markdown in the card panel (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('an agent’s description and comment render as Markdown: headings, task lists, tables, highlighted code, safe links, and only our own images', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const { columns } = await agent.ok('list_columns')
    const plan = [
      '## Plan',
      '- [x] Reproduce the failure',
      '- [ ] Fix the retry',
      '',
      '| Step | Owner |',
      '| --- | --- |',
      '| retry | agent |',
      '',
      '```ts',
      'const retries: number = 3',
      '```',
      '',
      'See [the docs](https://example.org/docs) and https://example.org/auto.',
      '',
      `![ours](/files/public/${orgId}/0123.png) ![theirs](https://tracker.example/pixel.png)`,
    ].join('\n')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Markdown plan',
      description: plan,
    })
    await agent.ok('add_comment', {
      taskId: task.id,
      body: '**Done**: see `retry.ts`\n\n1. one\n2. two',
    })
    const outside: string[] = []
    page.on('request', (r) => {
      if (!r.url().startsWith(running.server.url) && !r.url().startsWith('data:'))
        outside.push(r.url())
    })
    await openBoard(page, orgId)
    await card(page, 'Markdown plan').click()
    const view = page.getByTestId('description-view')
    await view.waitFor()
    await expect(view.locator('h2').textContent()).resolves.toBe('Plan')
    const boxes = view.locator('li.md-task-item input[type="checkbox"]')
    await expect(boxes.count()).resolves.toBe(2)
    await expect(boxes.first().isChecked()).resolves.toBe(true)
    await expect(boxes.last().isChecked()).resolves.toBe(false)
    await expect(view.locator('table td').allTextContents()).resolves.toEqual(['retry', 'agent'])
    await expect(view.locator('pre code .hljs-keyword').first().textContent()).resolves.toBe(
      'const',
    )
    const links = view.locator('a')
    await expect(links.evaluateAll((as) => as.map((a) => a.getAttribute('href')))).resolves.toEqual(
      ['https://example.org/docs', 'https://example.org/auto', 'https://tracker.example/pixel.png'],
    )
    await expect(
      view.locator('img').evaluateAll((is) => is.map((i) => i.getAttribute('src'))),
    ).resolves.toEqual([`/files/public/${orgId}/0123.png`])
    const comment = page.locator('.comment-body').first()
    await expect(comment.locator('strong').textContent()).resolves.toBe('Done')
    await expect(comment.locator('code').textContent()).resolves.toBe('retry.ts')
    await expect(comment.locator('ol li').count()).resolves.toBe(2)
    await assertNothingRan(page, view)
    expect(outside).toEqual([])
    expect(errors).toEqual([])

    // The editor opens on the Markdown source, and the preview comes back.
    await page.getByRole('button', { name: 'Edit description' }).click()
    await expect
      .poll(() => page.getByLabel('Description').textContent(), { timeout: 10_000 })
      .toContain('- [x] Reproduce the failure')
    await page.getByRole('button', { name: 'Preview' }).click()
    await view.waitFor()
    await context.close()
  })

  test('the usual XSS payloads written by an agent into a description and a comment: nothing runs, no handler, script or foreign URL reaches the page', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const dialogs: string[] = []
    page.on('dialog', (d) => {
      dialogs.push(d.message())
      void d.dismiss()
    })
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Hostile text',
      description: PAYLOADS,
    })
    await agent.ok('add_comment', { taskId: task.id, body: PAYLOADS })
    const outside: string[] = []
    page.on('request', (r) => {
      if (!r.url().startsWith(running.server.url)) outside.push(r.url())
    })
    await openBoard(page, orgId)
    await card(page, 'Hostile text').click()
    const view = page.getByTestId('description-view')
    await view.waitFor()
    // The payloads' text is there, shown as text.
    await expect(view.textContent()).resolves.toContain('<script>window.__xss=1</script>')
    await assertNothingRan(page, view)
    const comment = page.locator('.comment-body').first()
    await comment.waitFor()
    await expect(comment.textContent()).resolves.toContain('<svg onload="window.__xss=7">')
    await assertNothingRan(page, comment)
    expect(await page.evaluate(() => (window as { __xss?: unknown }).__xss)).toBeUndefined()
    expect(dialogs).toEqual([])
    expect(outside).toEqual([])
    expect(errors).toEqual([])
    await context.close()
  })
})
