import { describe, expect, test } from 'vitest'
import { WEBHOOK_EVENT_TYPES } from '../../shared/constants.ts'
import { Receiver, register, verifiesWith } from '../webhooks/support.ts'
import { serverAndBrowser, signedInContext, watchErrors } from './support.ts'

describe('webhook settings: rotating the secret and a test ping, in real Chromium', () => {
  const running = serverAndBrowser('pglite', { webhookAllowPrivate: true })

  test('the registration form offers every event there is, card.unblocked included, and registers the ones ticked', async () => {
    const receiver = await Receiver.start()
    try {
      const { context, page, person, orgId } = await signedInContext(
        running.browser,
        running.server.url,
      )
      const errors = watchErrors(page)
      await page.goto(`/o/${orgId}/settings/webhooks`)
      const events = page.getByRole('group', { name: 'Events' }).getByRole('checkbox')
      await expect
        .poll(() => events.evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).value)))
        .toEqual([...WEBHOOK_EVENT_TYPES])
      await page.getByLabel('Receiving URL').fill(`${receiver.url}/hook`)
      for (const type of WEBHOOK_EVENT_TYPES) {
        if (type !== 'card.unblocked') await page.locator(`input[value="${type}"]`).uncheck()
      }
      await page.getByRole('button', { name: 'Register webhook' }).click()
      await expect
        .poll(async () => {
          const { body } = await person.request('GET', `/api/app/orgs/${orgId}/webhooks`)
          return body.webhooks.map((w: { events: string[] }) => w.events)
        })
        .toEqual([['card.unblocked']])
      expect(errors).toEqual([])
      await context.close()
    } finally {
      await receiver.close()
    }
  })

  test('"Rotate secret" shows the new secret once with when the old one stops; "Send test ping" shows the outcome (status, duration, error) and the ping joins the delivery log', async () => {
    const receiver = await Receiver.start((r) => (r.path === '/broken' ? 500 : 200))
    try {
      const { context, page, person, orgId } = await signedInContext(
        running.browser,
        running.server.url,
      )
      const errors = watchErrors(page)
      const hook = await register(person, `${receiver.url}/ok`)
      await page.goto(`/o/${orgId}/settings/webhooks`)
      const item = page.getByTestId('webhook')

      await item.getByRole('button', { name: 'Rotate secret' }).click()
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click()
      const shown = item.getByTestId('rotated-secret')
      const secret = (await shown.getByTestId('webhook-new-secret').textContent()) ?? ''
      expect(secret).toMatch(/^whsec_/)
      expect(secret).not.toBe(hook.secret)
      const { body } = await person.request('GET', `/api/app/orgs/${orgId}/webhooks`)
      const expires = body.webhooks[0].previousSecretExpiresAt as string
      const when = await page.evaluate((iso) => new Date(iso).toLocaleString(), expires)
      await expect(shown.textContent()).resolves.toContain(
        `The old secret stops being accepted on ${when}`,
      )

      // The ping the page sends is signed with the secret the page showed, and the old one.
      await item.getByRole('button', { name: 'Send test ping' }).click()
      await expect
        .poll(() => item.getByTestId('ping-outcome').textContent())
        .toMatch(/^Test ping delivered: HTTP 200 in \d+ ms$/)
      const [ping] = receiver.received
      expect(ping?.json.type).toBe('ping')
      expect(ping && verifiesWith(secret, ping)).toEqual({ standard: true, service: true })
      expect(ping && verifiesWith(hook.secret, ping)).toEqual({ standard: true, service: true })
      await expect.poll(() => item.locator('tbody').textContent()).toContain('ping')
      await expect(item.locator('.delivery-delivered').count()).resolves.toBe(1)

      await item.getByRole('button', { name: 'I have stored it' }).click()
      await expect(item.getByTestId('rotated-secret').count()).resolves.toBe(0)

      // A failing receiver: the outcome says so, with the status and the error.
      await running.server.storage.db.query('update webhooks set url = $1 where id = $2', [
        `${receiver.url}/broken`,
        hook.id,
      ])
      await item.getByRole('button', { name: 'Send test ping' }).click()
      await expect
        .poll(() => item.getByTestId('ping-outcome').textContent())
        .toMatch(/^Test ping failed: HTTP 500 after \d+ ms$/)
      await expect.poll(() => item.locator('.delivery-failed').count()).toBe(1)

      // Nobody listening: no status, and the error in words.
      const gone = await Receiver.start()
      await gone.close()
      await running.server.storage.db.query('update webhooks set url = $1 where id = $2', [
        `${gone.url}/hooks`,
        hook.id,
      ])
      await item.getByRole('button', { name: 'Send test ping' }).click()
      await expect
        .poll(() => item.getByTestId('ping-outcome').textContent())
        .toMatch(/^Test ping failed: no answer after \d+ ms: connection refused$/)
      expect(errors).toEqual([])
      await context.close()
    } finally {
      await receiver.close()
    }
  })
})
