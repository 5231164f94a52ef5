import { useEffect, useState } from 'react'
import { appApi, type InvitePreview } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { navigate } from '../router.tsx'
import { session, useSession } from '../session.ts'
import { AuthFrame, LogIn, SignUp } from './auth-pages.tsx'

/** /invite/:token: shows whose invite it is, lets a person sign in or up, then joins. */
export function AcceptInvite({ token }: { token: string }) {
  const s = useSession()
  const [preview, setPreview] = useState<InvitePreview>()
  const [error, setError] = useState<string>()
  const [mode, setMode] = useState<'login' | 'signup'>('signup')
  const [busy, setBusy] = useState(false)

  useEffect(() => {
    appApi
      .invitePreview(token)
      .then(setPreview)
      .catch((e: unknown) => setError(describeError(e)))
  }, [token])

  const accept = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const { organization } = await appApi.acceptInvite(token)
      await session.refresh()
      navigate(`/o/${organization.id}/board`, { replace: true })
    } catch (e) {
      setError(describeError(e))
    } finally {
      setBusy(false)
    }
  }

  const title = preview ? `Join ${preview.organization.name}` : 'Join an organisation'
  return (
    <AuthFrame title={title}>
      {preview && (
        <p className="invite-summary">
          You were invited as <strong>{preview.role}</strong> ({preview.email}).
        </p>
      )}
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      {s.status === 'signed-in' ? (
        <div className="form">
          <p>
            Signed in as <strong>{s.user.email}</strong>.
          </p>
          <button
            type="button"
            className="btn btn-primary btn-block"
            onClick={() => void accept()}
            disabled={busy}
          >
            {busy ? 'Joining…' : 'Accept invite'}
          </button>
          <button
            type="button"
            className="btn btn-ghost btn-block"
            onClick={() => void session.logout()}
          >
            Use another account
          </button>
        </div>
      ) : (
        <>
          <div className="segmented" role="tablist" aria-label="Account">
            <button
              type="button"
              role="tab"
              aria-selected={mode === 'signup'}
              className={mode === 'signup' ? 'active' : ''}
              onClick={() => setMode('signup')}
            >
              New account
            </button>
            <button
              type="button"
              role="tab"
              aria-selected={mode === 'login'}
              className={mode === 'login' ? 'active' : ''}
              onClick={() => setMode('login')}
            >
              I have an account
            </button>
          </div>
          {mode === 'signup' ? (
            <SignUp onDone={() => void accept()} email={preview?.email} inviteNote />
          ) : (
            <LogIn onDone={() => void accept()} />
          )}
        </>
      )}
    </AuthFrame>
  )
}
