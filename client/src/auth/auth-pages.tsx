import { type FormEvent, useId, useState } from 'react'
import { describeError } from '../api/http.ts'
import { Link, navigate } from '../router.tsx'
import { session } from '../session.ts'

function nextPath(): string {
  const next = new URLSearchParams(location.search).get('next')
  // Only paths on this site: never an open redirect.
  return next?.startsWith('/') && !next.startsWith('//') ? next : '/'
}

export function Field({
  label,
  hint,
  ...input
}: React.InputHTMLAttributes<HTMLInputElement> & { label: string; hint?: string }) {
  const id = useId()
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      {hint && (
        <p id={`${id}-hint`} className="field-hint">
          {hint}
        </p>
      )}
    </div>
  )
}

export function AuthFrame({ title, children }: { title: string; children: React.ReactNode }) {
  return (
    <div className="auth-page">
      <main className="auth-card">
        <div className="auth-brand">
          <span className="brand-mark" aria-hidden="true" />
          <span>Corkboard</span>
        </div>
        <h1>{title}</h1>
        {children}
      </main>
    </div>
  )
}

export function LogIn({ onDone }: { onDone?: () => void }) {
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget)
    setBusy(true)
    setError(undefined)
    try {
      await session.login(String(form.get('email')), String(form.get('password')))
      if (onDone) onDone()
      else navigate(nextPath(), { replace: true })
    } catch (err) {
      setError(describeError(err))
    } finally {
      setBusy(false)
    }
  }
  const content = (
    <form onSubmit={submit} className="form" aria-describedby={error ? 'login-error' : undefined}>
      <Field label="Email" name="email" type="email" autoComplete="email" required />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="current-password"
        required
      />
      {error && (
        <p id="login-error" className="form-error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" className="btn btn-primary btn-block" disabled={busy}>
        {busy ? 'Logging in…' : 'Log in'}
      </button>
      {!onDone && (
        <p className="auth-switch">
          New here? <Link to={`/signup${location.search}`}>Create an account</Link>
        </p>
      )}
    </form>
  )
  return onDone ? content : <AuthFrame title="Log in">{content}</AuthFrame>
}

export function SignUp({
  onDone,
  email,
  inviteNote,
}: {
  onDone?: () => void
  email?: string
  inviteNote?: boolean
}) {
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const [name, setName] = useState('')
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault()
    const form = new FormData(e.currentTarget)
    setBusy(true)
    setError(undefined)
    try {
      const org = await session.signup({
        email: String(form.get('email')),
        password: String(form.get('password')),
        name: String(form.get('name')),
        organizationName: String(form.get('organizationName')),
      })
      if (onDone) onDone()
      else navigate(`/o/${org.id}/board`, { replace: true })
    } catch (err) {
      setError(describeError(err))
    } finally {
      setBusy(false)
    }
  }
  const content = (
    <form onSubmit={submit} className="form">
      <Field
        label="Your name"
        name="name"
        autoComplete="name"
        required
        maxLength={100}
        value={name}
        onChange={(e) => setName(e.target.value)}
      />
      <Field
        label="Email"
        name="email"
        type="email"
        autoComplete="email"
        required
        defaultValue={email}
        readOnly={email !== undefined}
      />
      <Field
        label="Password"
        name="password"
        type="password"
        autoComplete="new-password"
        minLength={8}
        required
        hint="At least 8 characters."
      />
      <Field
        label={inviteNote ? 'Your own organisation' : 'Organisation name'}
        name="organizationName"
        required
        maxLength={100}
        defaultValue={inviteNote ? undefined : ''}
        placeholder={inviteNote ? `${name || 'My'} team` : 'Acme'}
        hint={
          inviteNote
            ? 'Every account starts with an organisation of its own; you join the invited one right after.'
            : 'You will own it and can invite your team.'
        }
      />
      {error && (
        <p className="form-error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" className="btn btn-primary btn-block" disabled={busy}>
        {busy ? 'Creating account…' : 'Create account'}
      </button>
      {!onDone && (
        <p className="auth-switch">
          Already have an account? <Link to={`/login${location.search}`}>Log in</Link>
        </p>
      )}
    </form>
  )
  return onDone ? content : <AuthFrame title="Create your account">{content}</AuthFrame>
}
