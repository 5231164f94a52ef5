import { useEffect } from 'react'
import { AcceptInvite } from './auth/accept-invite.tsx'
import { LogIn, SignUp } from './auth/auth-pages.tsx'
import { matchPath, navigate, useLocation } from './router.tsx'
import { lastOrgId, session, useSession } from './session.ts'
import { Shell } from './shell.tsx'
import { ConfirmHost, PromptHost } from './ui/modal.tsx'
import { Notices } from './ui/notices.tsx'
import { Toasts } from './ui/toast.tsx'

function Routes() {
  const s = useSession()
  const { pathname } = useLocation()

  const invite = matchPath('/invite/:token', pathname)
  const signedIn = s.status === 'signed-in'

  useEffect(() => {
    if (s.status !== 'signed-in' || invite || pathname.startsWith('/o/')) return
    const remembered = lastOrgId()
    const target =
      s.organizations.find((o) => o.id === remembered) ?? s.organizations[0] ?? undefined
    if (target) navigate(`/o/${target.id}/board`, { replace: true })
  }, [s, pathname, invite])

  if (s.status === 'loading') {
    return (
      <div className="splash" role="status">
        <span className="brand-mark" aria-hidden="true" />
        <span>Loading Corkboard…</span>
      </div>
    )
  }
  if (invite) return <AcceptInvite token={invite.token as string} />
  if (!signedIn) return pathname === '/signup' ? <SignUp /> : <LogIn />
  if (s.organizations.length === 0) {
    return (
      <div className="auth-page">
        <div className="auth-card">
          <h1>No organisation yet</h1>
          <p>
            You are signed in as {s.user.email} but belong to no organisation. Ask a teammate for an
            invite link.
          </p>
          <button type="button" className="btn" onClick={() => void session.logout()}>
            Log out
          </button>
        </div>
      </div>
    )
  }
  const inOrg = matchPath('/o/:orgId', pathname.split('/').slice(0, 3).join('/'))
  if (!inOrg) return null
  return <Shell orgId={inOrg.orgId as string} />
}

export function App() {
  return (
    <>
      <Routes />
      <Toasts />
      <Notices />
      <ConfirmHost />
      <PromptHost />
    </>
  )
}
