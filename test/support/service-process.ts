import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'

export interface ServiceProcess {
  url: string
  child: ChildProcess
  /** Everything the process wrote to stderr so far (a crash's stack, say). */
  stderr(): string
  /** Everything it wrote, stdout (its JSON log lines) and stderr, in arrival order. */
  output(): string
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>
}

/** `npm start`'s arguments to node (package.json): its flags, then server/main.ts. */
const START_ARGS = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string }
  }
).scripts.start
  .split(/\s+/)
  .slice(1)

/** How long `stop` waits after SIGTERM before SIGKILL (the service's own bound is 25 s). */
const STOP_KILL_MS = 40_000

/**
 * The service as it runs in production: `npm start`, in a process of its own on port 0, on
 * storage that exists already. A crash is the process exiting, which a test can see
 * (`child.exitCode`), and a load generator does not share its event loop.
 */
export async function startProcess(env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, START_ARGS, {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SCRYPT_N: '1024',
      SIGNUPS_PER_ADDRESS: '1000000',
      OAUTH_REGISTRATIONS_PER_ADDRESS: '1000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let errors = ''
  let output = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    errors += chunk.toString()
    output += chunk.toString()
  })
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  // The address is looked for until it is found, then never again: a process logs a line
  // per request, and scanning all of its output on every chunk made a load generator's
  // CPU grow with the requests it had sent (a quarter of it after 12,000 calls).
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    const look = (chunk: Buffer) => {
      out += chunk.toString()
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (!m?.[1]) return
      child.stdout?.off('data', look)
      child.off('exit', exited)
      resolve(m[1])
    }
    const exited = (code: number | null) =>
      reject(new Error(`server exited with ${code}: ${out}${errors}`))
    child.stdout?.on('data', look)
    child.once('exit', exited)
  })
  return {
    url,
    child,
    stderr: () => errors,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      // A process that has not exited well after its own shutdown bound (25 s) is stuck:
      // killed, so that a failing suite leaves nothing spinning behind it.
      const stuck = setTimeout(() => child.kill('SIGKILL'), STOP_KILL_MS)
      await exited
      clearTimeout(stuck)
    },
  }
}
