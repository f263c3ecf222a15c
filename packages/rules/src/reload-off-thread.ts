/**
 * Owns reading a changed rules file without stalling requests: a worker thread reads, parses
 * and checks it (seconds for a file of megabytes), and the main thread compiles the result one
 * slice per event-loop turn. Where the worker file is missing (a bundler left it behind), the
 * reload runs on the main thread, as it did before, and says so once.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { createRuleSetBuilder, type Issue, type RuleSet, type RuleSetBuilder } from '@sluice/http'
import { RulesError } from './errors'
import { parseRules } from './load'
import { readBoundedText, UnreadableFile } from './bounded-read'
import { MAX_RULES_BYTES } from './bounds'
import { digestOf, NEXT_SLICE, type ReloadMessage, type ReloadRequest } from './reload-protocol'

/** Descriptors per message from the worker (about 3-4 ms to compile on the test machine). */
const SLICE = 100
/** Descriptors added between looks at the clock. */
const STEP = 10
/** Compiling yields to the event loop once a turn has taken this long. */
const TURN_MS = 3
/**
 * The worker's heap: a file within the bounds (bounds.ts) parses in less, and should the parser
 * need more, the worker alone fails (the reload is reported, the rules in force stay), never the
 * process. A 7 MB file of 58,220 rules peaks near 500 MB.
 */
export const RELOAD_WORKER_HEAP_MB = 1024

export type ReloadOutcome =
  | { readonly kind: 'unreadable'; readonly reason: string }
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'invalid'; readonly error: RulesError; readonly digest: string }
  | { readonly kind: 'valid'; readonly rules: RuleSet; readonly digest: string }

/**
 * The built worker: beside this module in dist/, or in dist/ when this module runs from the
 * sources (the test suite runs after a build).
 */
function findWorkerFile(): string | undefined {
  const candidates = [
    join(__dirname, 'rules-worker.js'),
    join(__dirname, '../dist/rules-worker.js'),
  ]
  return candidates.find((file) => existsSync(file))
}

let warnedNoWorker = false

/** Reads and compiles `file` in a worker; `signal` stops a reload a newer one replaced. */
export function reloadOffThread(
  request: Omit<ReloadRequest, 'slice'>,
  warn: (message: string) => void,
  signal?: AbortSignal,
): Promise<ReloadOutcome> {
  const workerFile = findWorkerFile()
  if (workerFile === undefined) {
    if (!warnedNoWorker) {
      warnedNoWorker = true
      warn(
        'sluice: rules-worker.js not found beside the Sluice build; rules reload on the main thread',
      )
    }
    return reloadHere(request)
  }
  const worker = new Worker(workerFile, {
    workerData: { ...request, slice: SLICE },
    resourceLimits: { maxOldGenerationSizeMb: RELOAD_WORKER_HEAP_MB },
  })
  worker.unref()
  return new Promise<ReloadOutcome>((resolve, reject) => {
    let builder: RuleSetBuilder | undefined
    let digest = ''
    const issues: Issue[] = []
    let settled = false
    const settle = (outcome: ReloadOutcome | Error): void => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', abort)
      void worker.terminate()
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const abort = (): void => settle({ kind: 'unchanged' })
    signal?.addEventListener('abort', abort)
    worker.on('message', (message: ReloadMessage) => {
      switch (message.type) {
        case 'unreadable':
          return settle({ kind: 'unreadable', reason: message.reason })
        case 'unchanged':
          return settle({ kind: 'unchanged' })
        case 'invalid':
          return settle({
            kind: 'invalid',
            error: new RulesError(request.source, message.issues),
            digest: message.digest,
          })
        case 'valid':
          builder = createRuleSetBuilder(message.domain, request.source, issues)
          digest = message.digest
          return worker.postMessage(NEXT_SLICE)
        case 'slice':
          return onSlice(message.records, message.last)
      }
    })
    function onSlice(records: Parameters<RuleSetBuilder['add']>[0], last: boolean): void {
      if (builder === undefined)
        return settle(new Error('rules worker sent a slice before its verdict'))
      compile(builder, records, 0, last)
    }
    /**
     * Adds `records` from `from` on, yielding to the event loop whenever a turn has taken
     * TURN_MS (a slow or busy machine compiles fewer descriptors per turn, not longer turns).
     */
    function compile(
      target: RuleSetBuilder,
      records: Parameters<RuleSetBuilder['add']>[0],
      from: number,
      last: boolean,
    ): void {
      if (settled) return
      const started = performance.now()
      let next = from
      while (next < records.length && performance.now() - started < TURN_MS) {
        target.add(records.slice(next, next + STEP))
        next += STEP
      }
      // The worker compiled the same descriptors without an issue; one here is a bug, not a file problem.
      if (issues.length > 0)
        return settle(new Error(`rules compile disagreed with the worker: ${issues[0].message}`))
      if (next < records.length)
        return void setImmediate(() => compile(target, records, next, last))
      // Asked for after a turn of the loop: Node delivers messages that arrive while it is
      // delivering in the same turn, which would chain every slice into one long task.
      if (!last) return void setImmediate(() => worker.postMessage(NEXT_SLICE))
      settle({ kind: 'valid', rules: target.finish(), digest })
    }
    worker.on('error', (error) => settle(error))
    worker.on('exit', (code) => settle(new Error(`the rules worker exited with code ${code}`)))
  })
}

/** The same reload on this thread: blocks while it parses. */
async function reloadHere(request: Omit<ReloadRequest, 'slice'>): Promise<ReloadOutcome> {
  let text: string
  try {
    text = readBoundedText(request.file, MAX_RULES_BYTES)
  } catch (error) {
    return {
      kind: 'unreadable',
      reason: error instanceof UnreadableFile ? error.reason : String(error),
    }
  }
  const digest = digestOf(text)
  if (digest === request.lastDigest) return { kind: 'unchanged' }
  try {
    return { kind: 'valid', rules: parseRules(text, { source: request.source }), digest }
  } catch (error) {
    if (!(error instanceof RulesError)) throw error
    return { kind: 'invalid', error, digest }
  }
}
