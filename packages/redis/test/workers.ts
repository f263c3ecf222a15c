// Node processes forked by the multi-process tests, and the messages they send, read in order.
import { fork, type ChildProcess } from 'node:child_process'

export interface Worker<M> {
  child: ChildProcess
  messages: M[]
  waiters: (() => void)[]
}

/** Forks `script` with `args`; what it sends is queued for nextMessage. */
export function forkWorker<M>(script: string, args: string[]): Worker<M> {
  const child = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const worker: Worker<M> = { child, messages: [], waiters: [] }
  const wake = (): void => {
    for (const waiter of worker.waiters.splice(0)) waiter()
  }
  child.on('message', (m: M) => {
    worker.messages.push(m)
    wake()
  })
  child.on('exit', wake)
  return worker
}

/** Whether the worker's process is still running. */
export function running(worker: Worker<unknown>): boolean {
  return worker.child.exitCode === null && worker.child.signalCode === null
}

/** The worker's next message; rejects if it exits first. */
export function nextMessage<M>(worker: Worker<M>): Promise<M> {
  return new Promise((resolve, reject) => {
    const take = (): void => {
      const message = worker.messages.shift()
      if (message) resolve(message)
      else if (!running(worker)) reject(new Error('worker exited'))
      else worker.waiters.push(take)
    }
    take()
  })
}
