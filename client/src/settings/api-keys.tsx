import { type FormEvent, useCallback, useState } from 'react'
import { type ApiKey, appApi, type ConnectedApp } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { KeyIcon } from '../ui/icons.tsx'
import { Labeled } from '../ui/labeled.tsx'
import { confirmDialog } from '../ui/modal.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { formatDate, NeedsAdmin, ShownOnce, useAdminList, useSubmit } from './admin-parts.tsx'
import { KeyUsage } from './key-usage.tsx'

/**
 * API keys: made here, shown exactly once, listed by name and prefix, revoked at once; and
 * beside them the apps connected to /mcp by OAuth sign-in, disconnected the same way.
 */
export function ApiKeys() {
  const { org, canAdmin } = useWorkspace()
  const fetchKeys = useCallback(async () => (await appApi.apiKeys(org.id)).apiKeys, [org.id])
  const { items: keys, error, reload: load } = useAdminList<ApiKey>(fetchKeys, canAdmin)
  const [created, setCreated] = useState<{ name: string; key: string }>()
  const [busy, submit] = useSubmit()

  if (!canAdmin) return <NeedsAdmin what="API keys" />

  const create = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = e.currentTarget
    const name = String(new FormData(form).get('name')).trim()
    if (!name) return
    await submit(async () => {
      const res = await appApi.createApiKey(org.id, name)
      setCreated({ name: res.apiKey.name, key: res.key })
      form.reset()
      await load()
    })
  }

  const revoke = async (k: ApiKey) => {
    const ok = await confirmDialog({
      title: `Revoke “${k.name}”?`,
      message:
        'Every program using this key is refused from this moment, even mid-request. This cannot be undone; make a new key to replace it.',
      confirmLabel: 'Revoke key',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.revokeApiKey(org.id, k.id)
      toast('success', `“${k.name}” was revoked`)
      await load()
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  return (
    <div className="settings-stack">
      <section className="settings-card" aria-labelledby="newkey-heading">
        <h2 id="newkey-heading">Create an API key</h2>
        <p className="muted">
          Agents and scripts call <code>POST {location.origin}/api/agent</code> with{' '}
          <code>Authorization: Bearer &lt;key&gt;</code>. The name labels the key on this screen
          only; the board shows the identity an agent sends when it claims a card.
        </p>
        <form className="inline-form" onSubmit={create}>
          <Labeled label="Key name" className="grow">
            {(p) => (
              <input {...p} name="name" required maxLength={100} placeholder="e.g. Triage agent" />
            )}
          </Labeled>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            <KeyIcon size={15} /> Create key
          </button>
        </form>
        {created && (
          <ShownOnce
            value={created.key}
            copyLabel="Copy key"
            testId="new-key"
            valueTestId="api-key-value"
            usage={<KeyUsage apiKey={created.key} />}
            onDone={() => setCreated(undefined)}
          >
            <strong>Copy the key for “{created.name}” now.</strong> It is shown this once and cannot
            be retrieved again; only a hash of it is kept. The set-ups below carry it too.
          </ShownOnce>
        )}
      </section>

      <section className="settings-card" aria-labelledby="keys-heading">
        <h2 id="keys-heading">Keys</h2>
        {error && (
          <p className="form-error" role="alert">
            {error}
          </p>
        )}
        {keys && keys.length === 0 && <p className="muted">No keys yet.</p>}
        {keys && keys.length > 0 && (
          <table className="table table-stack" data-testid="api-keys-table">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <td data-label="Name">{k.name}</td>
                  <td data-label="Key">
                    <code className="prefix">{k.prefix}…</code>
                  </td>
                  <td className="muted small" data-label="Created">
                    {formatDate(k.createdAt)}
                  </td>
                  <td className="muted small" data-label="By">
                    {k.createdBy ?? '—'}
                  </td>
                  <td className="muted small" data-label="Last used">
                    {k.lastUsedAt ? formatDate(k.lastUsedAt) : 'Never'}
                  </td>
                  <td className="actions-cell">
                    <button
                      type="button"
                      className="btn btn-ghost btn-small danger"
                      onClick={() => void revoke(k)}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      <ConnectedApps />
    </div>
  )
}

/** Apps (Claude, ChatGPT, an MCP Inspector...) a person connected by signing in to /mcp. */
function ConnectedApps() {
  const { org } = useWorkspace()
  const fetchApps = useCallback(async () => (await appApi.connectedApps(org.id)).apps, [org.id])
  const { items: apps, error, reload } = useAdminList<ConnectedApp>(fetchApps, true)

  const disconnect = async (a: ConnectedApp) => {
    const ok = await confirmDialog({
      title: `Disconnect “${a.clientName}”?`,
      message: `${a.clientName} (${a.redirectHost}) is refused from this moment, even mid-request. Someone can connect it again by signing in from it.`,
      confirmLabel: 'Disconnect',
      danger: true,
    })
    if (!ok) return
    try {
      await appApi.revokeConnectedApp(org.id, a.id)
      toast('success', `“${a.clientName}” was disconnected`)
      await reload()
    } catch (err) {
      toast('error', describeError(err))
    }
  }

  return (
    <section className="settings-card" aria-labelledby="apps-heading">
      <h2 id="apps-heading">Connected apps</h2>
      <p className="muted">
        Assistants connect to <code>{location.origin}/mcp</code> by signing in here; each acts
        through its own account with a member's permissions.
      </p>
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {apps && apps.length === 0 && <p className="muted">No connected apps.</p>}
      {apps && apps.length > 0 && (
        <table className="table table-stack" data-testid="connected-apps-table">
          <thead>
            <tr>
              <th scope="col">App</th>
              <th scope="col">Connected by</th>
              <th scope="col">Since</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {apps.map((a) => (
              <tr key={a.id}>
                <td data-label="App">
                  {a.clientName} <span className="muted small">{a.redirectHost}</span>
                </td>
                <td className="muted small" data-label="Connected by">
                  {a.grantedByEmail}
                </td>
                <td className="muted small" data-label="Since">
                  {formatDate(a.createdAt)}
                </td>
                <td className="muted small" data-label="Last used">
                  {a.lastUsedAt ? formatDate(a.lastUsedAt) : 'Never'}
                </td>
                <td className="actions-cell">
                  <button
                    type="button"
                    className="btn btn-ghost btn-small danger"
                    onClick={() => void disconnect(a)}
                  >
                    Disconnect
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
