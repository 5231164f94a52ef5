import { readdir, readFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'

/**
 * Where a race's CPU went, read from Linux's /proc: the service processes (every thread),
 * Postgres (every `postgres` process: backends, WAL writer, checkpointer), Redis, the load
 * generator (this process) and the whole machine. On two cores the three share the same
 * CPUs, so a rate is bounded by their sum per call, whatever the code waits on.
 */
export interface CpuSpent {
  /** CPU milliseconds over the race, each service process's. */
  service: number[]
  postgres: number
  redis: number
  generator: number
  /** How busy the machine's CPUs were, 0 to 1 (every process, ours or not). */
  machineBusy: number
}

/** /proc/<pid>/stat's utime + stime, in ms (clock ticks of 10 ms); undefined once gone. */
async function cpuOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
    // The command may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return undefined
  }
}

/** The processes whose command is `name` (/proc/<pid>/comm). */
async function pidsOf(name: string): Promise<number[]> {
  const pids: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const comm = (await readFile(`/proc/${entry}/comm`, 'utf8')).trim()
      if (comm === name) pids.push(Number(entry))
    } catch {
      // Gone while listed.
    }
  }
  return pids
}

/** The machine's busy and total jiffies since boot (/proc/stat's first line). */
async function machine(): Promise<{ busy: number; total: number }> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? ''
  const [, ...values] = line.trim().split(/\s+/)
  const n = values.map(Number)
  const total = n.reduce((s, x) => s + x, 0)
  const idle = (n[3] ?? 0) + (n[4] ?? 0)
  return { busy: total - idle, total }
}

/** Each process's CPU so far (ms); one gone since it was listed is left out. */
async function cpuOfEach(pids: readonly number[]): Promise<Map<number, number>> {
  const spent = new Map<number, number>()
  for (const pid of pids) {
    const ms = await cpuOf(pid)
    if (ms !== undefined) spent.set(pid, ms)
  }
  return spent
}

/** What the processes spent since `before` (one not in it started since: counted whole). */
async function spentSince(before: ReadonlyMap<number, number>, pids: readonly number[]) {
  let total = 0
  for (const [pid, ms] of await cpuOfEach(pids)) total += ms - (before.get(pid) ?? 0)
  return total
}

/**
 * Starts measuring; `stop` returns what each part spent since. A Postgres backend that
 * starts during the race counts whole (it did nothing before); one that ends during it is
 * lost, so the pools must stay open across the race. Undefined where /proc is missing.
 */
export async function cpuMeter(
  servicePids: readonly number[],
): Promise<{ stop(): Promise<CpuSpent> } | undefined> {
  try {
    await readFile('/proc/stat', 'utf8')
  } catch {
    return undefined
  }
  const redisPids = await pidsOf('redis-server')
  const before = await cpuOfEach([...servicePids, ...(await pidsOf('postgres')), ...redisPids])
  const generatorBefore = process.cpuUsage()
  const machineBefore = await machine()
  return {
    async stop() {
      const generator = process.cpuUsage(generatorBefore)
      const machineAfter = await machine()
      const service: number[] = []
      for (const pid of servicePids) service.push(await spentSince(before, [pid]))
      return {
        service,
        postgres: await spentSince(before, await pidsOf('postgres')),
        redis: await spentSince(before, redisPids),
        generator: (generator.user + generator.system) / 1000,
        machineBusy:
          (machineAfter.busy - machineBefore.busy) /
          Math.max(1, machineAfter.total - machineBefore.total),
      }
    },
  }
}

/** One line: CPU per call of each part, and what that sum allows on this machine's cores. */
export function cpuLine(spent: CpuSpent | undefined, calls: number): string {
  if (!spent) return '  CPU: not measured (no /proc)'
  const per = (ms: number) => (ms / calls).toFixed(2)
  const service = spent.service.reduce((a, b) => a + b, 0)
  const total = (service + spent.postgres + spent.redis + spent.generator) / calls
  const cores = availableParallelism()
  const ceiling = Math.round((cores * 1000) / total)
  // Counted where Redis does any work (two processes); on one it only ticks over.
  const redis = spent.redis / calls >= 0.005 ? ` + Redis ${per(spent.redis)} ms` : ''
  return `  CPU a call: service ${spent.service.map(per).join(' + ')} ms + Postgres ${per(spent.postgres)} ms${redis} + generator ${per(spent.generator)} ms = ${total.toFixed(2)} ms, at most ${ceiling} /s on ${cores} cores; machine ${Math.round(spent.machineBusy * 100)} % busy`
}
