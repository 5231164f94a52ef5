import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.tsx'
import { discardEarly, startEarly } from './live/early.ts'
import { session } from './session.ts'
import { registerServiceWorker } from './sw/register.ts'
import './styles.css'

// Who is signed in, and for a page of an organisation its live socket and sync token, are
// asked for at once, before the first render, rather than one after the other.
void session.load()
// In a task of its own: the socket and the worker cost the main thread ~25 ms to start,
// which would otherwise lengthen the task that evaluates the app's code.
setTimeout(startEarly, 0)
session.subscribe(() => {
  if (session.state.status === 'signed-out') discardEarly()
})

const root = document.getElementById('root')
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  )
}

// Only built apps have a service worker (the dev server serves sources).
if (import.meta.env.PROD) registerServiceWorker()
