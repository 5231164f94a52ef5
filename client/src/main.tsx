import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { App } from './app.tsx'
import { discardEarly, startEarly } from './live/early.ts'
import { session } from './session.ts'
import './styles.css'

// Who is signed in, and for a page of an organisation its live socket and sync token, are
// asked for at once, before the first render, rather than one after the other.
void session.load()
// In a task of its own: the socket and the worker cost the main thread ~25 ms to start,
// which would otherwise lengthen the task that evaluates the app's code.
setTimeout(() => startEarly(location.pathname), 0)
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

// The service worker keeps the app's files so it opens with no connection; the documents
// themselves live in IndexedDB. Only built apps have one (the dev server serves sources).
if (import.meta.env.PROD && 'serviceWorker' in navigator) {
  window.addEventListener('load', () => {
    navigator.serviceWorker.register('/sw.js').catch(() => {
      // No service worker (e.g. plain http on another host): the app still works online.
    })
  })
}
