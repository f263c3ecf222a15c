/**
 * Owns `watchRules`: a rules file kept loaded, reloaded off the event loop when it changes.
 */
import { statSync, watch, type FSWatcher } from 'node:fs'
import { stat } from 'node:fs/promises'
import { basename, dirname, resolve } from 'node:path'
import {
  checkFunction,
  checkPositiveInteger,
  declareOptions,
  invalidOption,
} from '@sluice/core/adapter'
import type { RuleSet, RulesLogger, RulesWatcher } from '@sluice/http'
import { parseRules, readRulesText } from './load'
import { reloadOffThread } from './reload-off-thread'
import { digestOf } from './reload-protocol'

export type { RulesLogger, RulesWatcher } from '@sluice/http'

export interface WatchRulesOptions {
  /**
   * Called after a valid new version replaced the rules, with the new and the previous set.
   * @default undefined
   */
  onChange?: (rules: RuleSet, previous: RuleSet) => void
  /**
   * Receives invalid versions (warn) and applied ones (info).
   * @default console
   */
  logger?: RulesLogger
  /**
   * Quiet time after the last change before the file is read, so an editor's burst of writes
   * is read once, complete.
   * @default 100
   */
  debounceMs?: number
}

function checkLogger(logger: unknown): void {
  if (typeof (logger as RulesLogger | null)?.warn !== 'function') {
    invalidOption('logger', logger, 'an object with warn(message)')
  }
}

/** watchRules' options, declared once. */
export const WATCH_RULES_OPTIONS = declareOptions<WatchRulesOptions>('watchRules', {
  onChange: { doc: 'called after a valid new version replaced the rules', check: checkFunction },
  logger: {
    doc: 'receives invalid versions and applied ones',
    default: console,
    check: checkLogger,
  },
  debounceMs: {
    doc: 'quiet time after the last change before the file is read (ms)',
    default: 100,
    check: checkPositiveInteger,
    orNull: true,
  },
})

/** How often the watched file's folder is looked up again (see the rewatch in watchRules). */
const REWATCH_MS = 2000

/** The folder at `path` as its device and inode, or undefined when there is none. */
function folderIdentity(path: string): string | undefined {
  try {
    const found = statSync(path)
    return `${found.dev}:${found.ino}`
  } catch {
    return undefined
  }
}

/**
 * Loads `file` now (throwing a RulesError if it is invalid: start-up should fail loudly) and
 * reloads it whenever it changes. A valid new version replaces the rules in one assignment; an
 * invalid one is reported through `logger.warn` and the previous rules stay in force. The
 * directory is watched, not the file, so editors that save by renaming and Kubernetes ConfigMap
 * symlink swaps are seen too. The watcher does not keep the process alive.
 */
export function watchRules(file: string, options: WatchRulesOptions = {}): RulesWatcher {
  const given = WATCH_RULES_OPTIONS.resolve(options)
  const onChange = given.onChange
  const logger = given.logger as RulesLogger
  const debounceMs = given.debounceMs as number
  const path = resolve(file)
  // The digest of the text in force: an event that changed nothing (or repeated an invalid text)
  // is ignored.
  const text = readRulesText(file)
  let lastDigest = digestOf(text)
  let rules = parseRules(text, { source: file })
  // One read at a time, so a slow early read never wins; a request during a read is served by
  // one more read after it (later requests join that one).
  let reading: Promise<void> | undefined
  let queued: Promise<void> | undefined
  const stopReading = new AbortController()
  let timer: NodeJS.Timeout | undefined
  let closed = false

  function read(): Promise<void> {
    if (queued !== undefined) return queued
    if (reading === undefined) {
      reading = readOnce().finally(() => (reading = undefined))
      return reading
    }
    queued = reading.then(() => {
      queued = undefined
      return read()
    })
    return queued
  }

  async function reload(): Promise<boolean> {
    const before = rules
    await read()
    return rules !== before
  }

  async function readOnce(): Promise<void> {
    const outcome = await reloadOffThread(
      { file: path, source: file, lastDigest },
      (message) => logger.warn(message),
      stopReading.signal,
    ).catch((error: unknown) => ({ kind: 'failed' as const, error }))
    if (closed) return
    if (outcome.kind === 'failed') {
      logger.warn(
        `sluice: rules reload failed, the previous rules stay in force: ${String(outcome.error)}`,
      )
      return
    }
    if (outcome.kind === 'unreadable') {
      logger.warn(
        `sluice: cannot read rules ${file} (${outcome.reason}); the previous rules stay in force`,
      )
      return
    }
    if (outcome.kind === 'unchanged') return
    if (outcome.kind === 'invalid') {
      lastDigest = outcome.digest
      logger.warn(
        `sluice: rules not reloaded, the previous rules stay in force:\n${outcome.error.message}`,
      )
      return
    }
    lastDigest = outcome.digest
    const previous = rules
    rules = outcome.rules
    logger.info?.(`sluice: rules reloaded from ${file} (${rules.rules.length} rules)`)
    if (onChange !== undefined) {
      try {
        onChange(rules, previous)
      } catch (error) {
        logger.warn(`sluice: the rules onChange callback threw: ${String(error)}`)
      }
    }
  }

  function schedule(): void {
    if (closed) return
    if (timer !== undefined) clearTimeout(timer)
    timer = setTimeout(() => {
      timer = undefined
      void read()
    }, debounceMs)
    timer.unref()
  }

  const name = basename(path)
  const folder = dirname(path)
  function watchFolder(): FSWatcher {
    const made = watch(folder, { persistent: false }, (_event, changed) => {
      // A ConfigMap swaps a `..data` symlink, not the file: any change in the folder may be ours,
      // and reading an unchanged file costs one small read.
      if (changed === null || changed === name || changed.startsWith('..')) schedule()
    })
    made.on('error', (error) => logger.warn(`sluice: watching ${file} failed: ${String(error)}`))
    return made
  }
  let watcher: FSWatcher | undefined = watchFolder()
  let watchedFolder = folderIdentity(folder)
  // A watch follows the folder it was given, not its path: a folder swapped for another (`mv
  // conf.new conf`) or deleted and made again left it on the old one, and no edit was seen
  // again. Every REWATCH_MS the path's folder is looked up; a new one is watched and read.
  const rewatch = setInterval(() => {
    void stat(folder)
      .then(
        (found) => `${found.dev}:${found.ino}`,
        () => undefined,
      )
      .then((identity) => {
        if (closed || identity === watchedFolder) return
        watchedFolder = identity
        watcher?.close()
        watcher = undefined
        if (identity === undefined) return
        watcher = watchFolder()
        schedule()
      })
  }, REWATCH_MS)
  rewatch.unref()

  return {
    get rules() {
      return rules
    },
    reload,
    close() {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      stopReading.abort()
      clearInterval(rewatch)
      watcher?.close()
      watcher = undefined
    },
  }
}
