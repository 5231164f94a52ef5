import type { Locator } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { STORAGES } from '../support/storage.ts'
import {
  card,
  contextAs,
  joinedMember,
  openBoard,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

/**
 * The description's shared editor (issue 32): two people edit it at once in CodeMirror
 * bound to the card document's description; each sees the other's cursor with their name,
 * both keep their words, undo takes back only one's own typing, and a claimed card's
 * description is locked with its holder named.
 */
/** The editor's text, without the other people's cursor widgets (their name labels). */
const textOf = (editor: Locator) =>
  editor.evaluate((el) => {
    const copy = el.cloneNode(true) as HTMLElement
    for (const w of copy.querySelectorAll('.cm-ySelectionCaret, .cm-placeholder')) w.remove()
    return copy.textContent
  })

describe.each(STORAGES)('the shared description editor (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test("two people type at once: both keep their words, each sees the other's named cursor, undo takes back only one's own typing; a claim locks it", async () => {
    const ada = await signedInContext(running.browser, running.server.url, {
      name: 'Ada Lovelace',
    })
    const grace = await joinedMember(running.server.url, ada.person, 'Grace Hopper')
    const graceContext = await contextAs(running.browser, running.server.url, grace)
    const gracePage = await graceContext.newPage()
    const errors = [...watchErrors(ada.page), ...watchErrors(gracePage)]
    const { agent, orgId } = ada
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Write the plan',
      description: 'Intro.',
    })
    const editors: Locator[] = []
    for (const page of [ada.page, gracePage]) {
      await openBoard(page, orgId)
      await card(page, 'Write the plan').click()
      await page.getByRole('button', { name: 'Edit description' }).click()
      const editor = page.getByTestId('card-panel').getByRole('textbox', { name: 'Description' })
      await expect.poll(() => textOf(editor), { timeout: 10_000 }).toBe('Intro.')
      editors.push(editor)
    }
    const [adaEditor, graceEditor] = editors as [(typeof editors)[0], (typeof editors)[0]]

    // Ada types at the end, Grace at the start, at the same time.
    await adaEditor.click()
    await ada.page.keyboard.press('Control+End')
    await graceEditor.click()
    await gracePage.keyboard.press('Control+Home')
    await Promise.all([
      ada.page.keyboard.type(' Ada was here.', { delay: 15 }),
      gracePage.keyboard.type('Grace: ', { delay: 15 }),
    ])
    const both = 'Grace: Intro. Ada was here.'
    await expect.poll(() => textOf(adaEditor), { timeout: 10_000 }).toBe(both)
    await expect.poll(() => textOf(graceEditor), { timeout: 10_000 }).toBe(both)
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.description, {
        timeout: 10_000,
      })
      .toBe(both)

    // Each sees the other's cursor, named.
    await expect
      .poll(() => ada.page.locator('.cm-ySelectionInfo').allTextContents(), { timeout: 10_000 })
      .toContain('Grace Hopper')
    await expect
      .poll(() => gracePage.locator('.cm-ySelectionInfo').allTextContents(), { timeout: 10_000 })
      .toContain('Ada Lovelace')

    // Grace's undo takes back her own words only. Her typing is one undo step when her keys
    // come within the undo manager's 500 ms of each other; on a loaded machine they may not
    // (a CI run undid only ': '), so she undoes until her words are gone, one step at a time.
    for (let step = 0; step < 'Grace: '.length; step++) {
      const before = await textOf(graceEditor)
      if (before === 'Intro. Ada was here.') break
      await gracePage.keyboard.press('Control+z')
      await expect.poll(() => textOf(graceEditor), { timeout: 5_000 }).not.toBe(before)
    }
    await expect.poll(() => textOf(graceEditor), { timeout: 10_000 }).toBe('Intro. Ada was here.')
    await expect.poll(() => textOf(adaEditor), { timeout: 10_000 }).toBe('Intro. Ada was here.')

    // Undo outlives a look at the preview: Ada's next words are taken back after it.
    await adaEditor.click()
    await ada.page.keyboard.press('Control+End')
    await ada.page.keyboard.type(' Then more.', { delay: 15 })
    await expect
      .poll(() => textOf(adaEditor), { timeout: 10_000 })
      .toBe('Intro. Ada was here. Then more.')
    await ada.page.getByRole('button', { name: 'Preview' }).click()
    await expect
      .poll(() => ada.page.getByTestId('description-view').textContent(), { timeout: 10_000 })
      .toContain('Then more.')
    await ada.page.getByRole('button', { name: 'Edit description' }).click()
    await adaEditor.click()
    await ada.page.keyboard.press('Control+z')
    // (Her two typings may be one undo step: what matters is that the undo still works.)
    await expect.poll(() => textOf(adaEditor), { timeout: 10_000 }).not.toContain('Then more.')
    await expect.poll(() => textOf(adaEditor), { timeout: 10_000 }).toMatch(/^Intro\./)
    await expect.poll(() => textOf(graceEditor), { timeout: 10_000 }).toBe(await textOf(adaEditor))

    // An agent claims the card: the description is locked, its holder named.
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Paul' })
    const locked = ada.page.getByTestId('description-locked')
    await expect.poll(() => locked.textContent(), { timeout: 10_000 }).toContain('Paul')
    await expect(ada.page.getByTestId('description-editor').count()).resolves.toBe(0)
    await expect(ada.page.getByTestId('description-view').textContent()).resolves.toContain(
      'Intro.',
    )
    expect(errors).toEqual([])
    await graceContext.close()
    await ada.context.close()
  })
})
