/**
 * Owns the leases of a tier: one LeaseEntry per key and set of policies (and rule keys), found
 * again by value, and forgotten once idle.
 */
import type { Policy } from '../policy'
import type { StoreRequest } from '../store/types'
import { LeaseEntry } from './lease'
import type { TierSettings } from './options'

/** What identifies an entry: the request's key, policies and rule keys. */
type Identity = Pick<StoreRequest, 'key' | 'keys' | 'policies'>

function samePolicies(a: readonly Policy[], b: readonly Policy[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) {
    // Throttling scales limit and burst but keeps the id: a scaled set leases apart.
    if (a[i].id !== b[i].id || a[i].limit !== b[i].limit || a[i].burst !== b[i].burst) return false
  }
  return true
}

function sameKeys(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

export class LeaseTable {
  /** Entries per key: usually one (a key under several limiters or throttled sets has more). */
  private readonly byKey = new Map<string, LeaseEntry[]>()

  constructor(private readonly settings: TierSettings) {}

  find(request: Identity): LeaseEntry | undefined {
    const list = this.byKey.get(request.key)
    if (list === undefined) return undefined
    for (const entry of list) {
      if (samePolicies(entry.policies, request.policies) && sameKeys(entry.keys, request.keys))
        return entry
    }
    return undefined
  }

  /** The request's entry, made when it has none. */
  entryFor(request: Identity): LeaseEntry {
    const found = this.find(request)
    if (found !== undefined) return found
    const entry = new LeaseEntry(request.key, request.keys, request.policies, this.settings)
    const list = this.byKey.get(request.key)
    if (list === undefined) this.byKey.set(request.key, [entry])
    else list.push(entry)
    return entry
  }

  /** The entries of one key. */
  ofKey(key: string): readonly LeaseEntry[] {
    return this.byKey.get(key) ?? []
  }

  *[Symbol.iterator](): IterableIterator<LeaseEntry> {
    for (const list of this.byKey.values()) yield* list
  }

  clear(): void {
    this.byKey.clear()
  }

  /**
   * Hands `end` each entry whose lease expired by `now` with no store call under way, and
   * forgets those whose lease had already ended by the previous sweep (their next lease
   * starts small again).
   */
  sweep(now: number, end: (entry: LeaseEntry) => void): void {
    for (const [key, list] of this.byKey) {
      for (let i = list.length - 1; i >= 0; i--) {
        const entry = list[i]
        if (entry.pending !== undefined) continue
        if (entry.expiresAt === 0) list.splice(i, 1)
        else if (now >= entry.expiresAt) end(entry)
      }
      if (list.length === 0) this.byKey.delete(key)
    }
  }
}
