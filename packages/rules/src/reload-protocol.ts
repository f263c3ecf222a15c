/**
 * Owns the messages between a rules reload and its worker thread. The worker reads, parses,
 * validates and test-compiles the file; the main thread then compiles the valid descriptors it
 * sends, one slice per request, so no step holds the event loop for long.
 */
import { createHash } from 'node:crypto'
import type { RulesIssue } from './errors'
import type { FlatDescriptor } from '@sluice/http'

/** What the main thread hands the worker. */
export interface ReloadRequest {
  readonly file: string
  /** Names the file in messages. */
  readonly source: string
  /** Digest of the text in force: an unchanged file is reported as such, not parsed again. */
  readonly lastDigest: string
  /** Descriptors per slice. */
  readonly slice: number
}

/** The worker's answers, in order: one verdict, then (when valid) the slices asked for. */
export type ReloadMessage =
  | { readonly type: 'unreadable'; readonly reason: string }
  | { readonly type: 'unchanged' }
  | { readonly type: 'invalid'; readonly digest: string; readonly issues: readonly RulesIssue[] }
  | { readonly type: 'valid'; readonly digest: string; readonly domain: string }
  | { readonly type: 'slice'; readonly records: readonly FlatDescriptor[]; readonly last: boolean }

/** The main thread's request for the next slice. */
export const NEXT_SLICE = 'next'

/** Identity of a rules text, so a reload that changed nothing is skipped. */
export function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('base64')
}
