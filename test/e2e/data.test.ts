import { readFileSync } from 'node:fs'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { card, launchBrowser, openBoard, signedInContext, watchErrors } from './support.ts'

describe.each(STORAGES)('settings → data: export and import in real Chromium (%s)', (kind) => {
  let from: TestServer
  let to: TestServer
  let browser: Browser

  beforeAll(async () => {
    ;[from, to, browser] = await Promise.all([
      startServer(kind),
      startServer(kind),
      launchBrowser(),
    ])
  })
  afterAll(async () => {
    await browser?.close()
    await from?.close()
    await to?.close()
  })

  test('the export downloads with its size shown; the archive imports on another server after a preview of what it creates', async () => {
    const a = await signedInContext(browser, from.url)
    const errors = watchErrors(a.page)
    const { columns } = await a.agent.ok('list_columns')
    const { task } = await a.agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Travels with its comments',
      description: 'kept whole',
    })
    await a.agent.ok('add_comment', { taskId: task.id, body: 'first remark' })
    const { task: gone } = await a.agent.ok('create_task', {
      columnId: columns[3].id,
      title: 'Archived before the move',
    })
    await a.agent.ok('archive_task', { taskId: gone.id })

    await a.page.goto(`/o/${a.orgId}/settings/data`)
    const downloading = a.page.waitForEvent('download')
    await a.page.getByRole('button', { name: 'Download export' }).click()
    const download = await downloading
    const path = await download.path()
    const bytes = readFileSync(path)
    expect(bytes.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b])) // gzip
    await expect(a.page.getByTestId('export-size').textContent()).resolves.toMatch(
      /\d+(\.\d)? (B|KB|MB)/,
    )
    expect(download.suggestedFilename()).toMatch(/\.corkboard\.tar\.gz$/)
    expect(errors).toEqual([])
    await a.context.close()

    const b = await signedInContext(browser, to.url, { organizationName: 'Moved in' })
    const errorsB = watchErrors(b.page)
    await b.page.goto(`/o/${b.orgId}/settings/data`)
    await b.page.getByTestId('import-file').setInputFiles({
      name: download.suggestedFilename(),
      mimeType: 'application/gzip',
      buffer: bytes,
    })
    const preview = b.page.getByTestId('import-preview')
    await preview.waitFor()
    await expect(preview.getByTestId('count-cards').textContent()).resolves.toBe('1')
    await expect(preview.getByTestId('count-archived').textContent()).resolves.toBe('1')
    await expect(preview.getByTestId('count-comments').textContent()).resolves.toBe('1')
    // Nothing is written by the preview.
    expect((await b.agent.ok('get_board')).tasks).toEqual([])

    await preview.getByRole('button', { name: 'Import', exact: true }).click()
    await b.page.getByTestId('import-done').waitFor()
    await openBoard(b.page, b.orgId)
    await card(b.page, 'Travels with its comments').waitFor()
    const moved = await b.agent.ok('get_task', { taskId: task.id })
    expect(moved.task.description).toBe('kept whole')
    expect(moved.comments.map((c: { body: string }) => c.body)).toEqual(['first remark'])
    expect(errorsB).toEqual([])
    await b.context.close()
  })

  test('a damaged file is refused in the preview, naming what is wrong, and nothing is imported', async () => {
    const b = await signedInContext(browser, to.url, { organizationName: 'Still empty' })
    await b.page.goto(`/o/${b.orgId}/settings/data`)
    await b.page.getByTestId('import-file').setInputFiles({
      name: 'broken.tar.gz',
      mimeType: 'application/gzip',
      buffer: Buffer.from('definitely not an archive'),
    })
    await expect(b.page.getByTestId('import-error').textContent()).resolves.toMatch(/not gzip/)
    await expect(b.page.getByRole('button', { name: 'Import', exact: true }).count()).resolves.toBe(
      0,
    )
    expect((await b.agent.ok('get_board')).tasks).toEqual([])
    await b.context.close()
  })
})
