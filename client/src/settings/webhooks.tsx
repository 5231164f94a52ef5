import { type FormEvent, useCallback, useEffect, useState } from 'react'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../../../shared/constants.ts'
import { appApi, type PingOutcome, type Webhook } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { RefreshIcon } from '../ui/icons.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { formatDate, NeedsAdmin, ShownOnce, useAdminList, useSubmit } from './admin-parts.tsx'

/** What each event means, for every event there is (a new one fails the typecheck here). */
const EVENT_TEXT: Record<WebhookEventType, string> = {
  'card.created': 'A card was created (by anyone or anything)',
  'card.moved': 'A card changed column',
  'comment.added': 'A comment was added (says whether a person wrote it)',
  'card.unblocked': 'The last open card a card waited for closed: it can be worked on',
}
const EVENTS = WEBHOOK_EVENT_TYPES.map((id) => ({ id, text: EVENT_TEXT[id] }))

const STATUS_TEXT: Record<string, string> = {
  pending: 'Pending',
  delivered: 'Delivered',
  failed: 'Failed',
  cancelled: 'Cancelled',
}

/** A test ping's outcome in one line: the receiver's answer (or why there was none) and how long it took. */
function PingResult({ outcome: o }: { outcome: PingOutcome | undefined }) {
  if (!o) return null
  const answer = o.status !== null ? `HTTP ${o.status}` : 'no answer'
  const why = o.error && o.error !== answer ? `: ${o.error}` : ''
  return (
    <p
      className={o.delivered ? 'hook-ping' : 'hook-ping hook-reason'}
      role="status"
      data-testid="ping-outcome"
    >
      {o.delivered
        ? `Test ping delivered: ${answer} in ${o.durationMs} ms`
        : `Test ping failed: ${answer} after ${o.durationMs} ms${why}`}
    </p>
  )
}

/** Webhooks: register an address for events, see each one's health and recent deliveries. */
export function Webhooks() {
  const { org, canAdmin } = useWorkspace()
  const fetchHooks = useCallback(async () => (await appApi.webhooks(org.id)).webhooks, [org.id])
  const { items: hooks, error, reload: load } = useAdminList<Webhook>(fetchHooks, canAdmin)
  const [secret, setSecret] = useState<{ url: string; secret: string }>()
  const [rotated, setRotated] = useState<{
    webhookId: string
    secret: string
    previousSecretExpiresAt: string
  }>()
  const [pings, setPings] = useState<Readonly<Record<string, PingOutcome>>>({})
  const [busy, submit] = useSubmit()

  useEffect(() => {
    if (!canAdmin) return
    // Deliveries change on their own (retries, switching off): keep the list fresh.
    const timer = setInterval(() => void load(), 15_000)
    return () => clearInterval(timer)
  }, [canAdmin, load])

  if (!canAdmin) return <NeedsAdmin what="Webhooks" />

  const register = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const data = new FormData(form)
    const events = data.getAll('events').map(String)
    if (events.length === 0) {
      toast('error', 'Choose at least one event')
      return
    }
    await submit(async () => {
      const res = await appApi.createWebhook(org.id, String(data.get('url')).trim(), events)
      setSecret({ url: res.webhook.url, secret: res.secret })
      form.reset()
      await load()
    })
  }

  const enable = async (h: Webhook) => {
    try {
      await appApi.enableWebhook(org.id, h.id)
      toast('success', 'Webhook switched back on')
      await load()
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  const rotate = async (h: Webhook) => {
    const ok = await confirmDialog({
      title: 'Rotate the signing secret?',
      message: `${h.url} gets a new secret, shown once. For 24 hours every delivery is signed with both the new and the current secret, so the receiver can switch over; then only the new one.`,
      confirmLabel: 'Rotate secret',
    })
    if (!ok) return
    await submit(async () => {
      const res = await appApi.rotateWebhookSecret(org.id, h.id)
      setRotated({ webhookId: h.id, ...res })
      await load()
    })
  }

  const ping = async (h: Webhook) => {
    await submit(async () => {
      const outcome = await appApi.testWebhook(org.id, h.id)
      setPings((all) => ({ ...all, [h.id]: outcome }))
      // The ping is in the delivery log now.
      await load()
    })
  }

  const remove = async (h: Webhook) => {
    const ok = await confirmDialog({
      title: 'Delete this webhook?',
      message: `${h.url} stops receiving events; deliveries still waiting are dropped.`,
      confirmLabel: 'Delete webhook',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.deleteWebhook(org.id, h.id)
      await load()
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  return (
    <div className="settings-stack">
      <section className="settings-card" aria-labelledby="newhook-heading">
        <h2 id="newhook-heading">Register a webhook</h2>
        <p className="muted">
          Each delivery is signed (<code>X-Service-Signature</code>, and the Standard Webhooks
          headers) with the endpoint's secret. Answer 2xx within 8 seconds; failures are retried
          five times over about four hours, and five failed events in a row switch the endpoint off.
        </p>
        <form className="form" onSubmit={register}>
          <Labeled label="Receiving URL">
            {(p) => (
              <input
                {...p}
                name="url"
                type="url"
                required
                placeholder="https://example.com/hooks/corkboard"
              />
            )}
          </Labeled>
          <fieldset className="field">
            <legend>Events</legend>
            {EVENTS.map((ev) => (
              <label key={ev.id} className="check">
                <input type="checkbox" name="events" value={ev.id} defaultChecked />
                <span>
                  <code>{ev.id}</code> <span className="muted">{ev.text}</span>
                </span>
              </label>
            ))}
          </fieldset>
          <div>
            <button type="submit" className="btn btn-primary" disabled={busy}>
              Register webhook
            </button>
          </div>
        </form>
        {secret && (
          <ShownOnce
            value={secret.secret}
            copyLabel="Copy secret"
            valueTestId="webhook-secret"
            onDone={() => setSecret(undefined)}
          >
            <strong>Signing secret for {secret.url}.</strong> It is shown this once: store it with
            the receiver to verify deliveries.
          </ShownOnce>
        )}
      </section>

      <section className="settings-card" aria-labelledby="hooks-heading">
        <div className="card-head">
          <h2 id="hooks-heading">Webhooks</h2>
          <button type="button" className="btn btn-ghost btn-small" onClick={() => void load()}>
            <RefreshIcon size={14} /> Refresh
          </button>
        </div>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        {hooks?.length === 0 && <p className="muted">No webhooks yet.</p>}
        <ul className="hook-list">
          {hooks?.map((h) => (
            <li key={h.id} className="hook" data-testid="webhook">
              <div className="hook-head">
                <code className="hook-url">{h.url}</code>
                <span className={`badge ${h.enabled ? 'badge-ok' : 'badge-bad'}`}>
                  {h.enabled ? 'Active' : 'Switched off'}
                </span>
                <span className="header-spacer" />
                {!h.enabled && (
                  <button
                    type="button"
                    className="btn btn-small btn-primary"
                    onClick={() => void enable(h)}
                  >
                    Re-enable
                  </button>
                )}
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={busy}
                  onClick={() => void ping(h)}
                >
                  Send test ping
                </button>
                <button
                  type="button"
                  className="btn btn-small"
                  disabled={busy}
                  onClick={() => void rotate(h)}
                >
                  Rotate secret
                </button>
                <button
                  type="button"
                  className="btn btn-small btn-ghost danger"
                  onClick={() => void remove(h)}
                >
                  Delete
                </button>
              </div>
              <p className="muted small">
                Events: {h.events.join(', ')} · registered {formatDate(h.createdAt)}
                {h.consecutiveFailures ? ` · ${h.consecutiveFailures} failed in a row` : ''}
                {h.previousSecretExpiresAt && Date.parse(h.previousSecretExpiresAt) > Date.now()
                  ? ` · the previous secret also signs until ${formatDate(h.previousSecretExpiresAt)}`
                  : ''}
              </p>
              {rotated?.webhookId === h.id && (
                <ShownOnce
                  value={rotated.secret}
                  copyLabel="Copy new secret"
                  testId="rotated-secret"
                  valueTestId="webhook-new-secret"
                  onDone={() => setRotated(undefined)}
                >
                  <strong>New signing secret for {h.url}.</strong> It is shown this once. The old
                  secret stops being accepted on {formatDate(rotated.previousSecretExpiresAt)}.
                  Until then each delivery carries a signature for each secret.
                </ShownOnce>
              )}
              <PingResult outcome={pings[h.id]} />
              {!h.enabled && h.disabledReason && (
                <p className="hook-reason" role="note">
                  Switched off {h.disabledAt ? `on ${formatDate(h.disabledAt)}` : ''}:{' '}
                  {h.disabledReason}
                </p>
              )}
              {h.recentDeliveries && h.recentDeliveries.length > 0 ? (
                <table className="table table-compact">
                  <caption className="sr-only">Recent deliveries to {h.url}</caption>
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Status</th>
                      <th scope="col">Attempts</th>
                      <th scope="col">Last answer</th>
                      <th scope="col">When</th>
                    </tr>
                  </thead>
                  <tbody>
                    {h.recentDeliveries.map((d) => (
                      <tr key={d.id}>
                        <td>
                          <code>{d.eventType}</code>
                        </td>
                        <td>
                          <span className={`badge delivery-${d.status}`}>
                            {STATUS_TEXT[d.status] ?? d.status}
                          </span>
                        </td>
                        <td>{d.attempts}</td>
                        <td className="small">
                          {d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : ''}
                          {d.lastError && !d.lastError.startsWith('HTTP ') ? ` ${d.lastError}` : ''}
                          {d.nextAttemptAt ? ` · next try ${formatDate(d.nextAttemptAt)}` : ''}
                        </td>
                        <td className="muted small">
                          {formatDate(d.lastAttemptAt ?? d.createdAt)}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : (
                <p className="muted small">No deliveries yet.</p>
              )}
            </li>
          ))}
        </ul>
      </section>
    </div>
  )
}
