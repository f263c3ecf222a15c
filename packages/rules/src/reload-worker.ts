/**
 * The worker-thread side of a rules reload (see reload-protocol.ts). Built as its own file,
 * dist/rules-worker.js; it exits when the main thread terminates it.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads'
import { RulesError } from './errors'
import { flattenDescriptors } from '@sluice/http'
import { checkRulesText } from './load'
import { readBoundedText, UnreadableFile } from './bounded-read'
import { MAX_RULES_BYTES } from './bounds'
import { digestOf, type ReloadMessage, type ReloadRequest } from './reload-protocol'

async function verdict(
  request: ReloadRequest,
): Promise<{ message: ReloadMessage; records?: ReturnType<typeof flattenDescriptors> }> {
  let text: string
  try {
    text = readBoundedText(request.file, MAX_RULES_BYTES)
  } catch (error) {
    const reason = error instanceof UnreadableFile ? error.reason : String(error)
    return { message: { type: 'unreadable', reason } }
  }
  const digest = digestOf(text)
  if (digest === request.lastDigest) return { message: { type: 'unchanged' } }
  try {
    const { document } = checkRulesText(text, request.source)
    return {
      message: { type: 'valid', digest, domain: document.domain },
      records: flattenDescriptors(document.descriptors),
    }
  } catch (error) {
    if (!(error instanceof RulesError)) throw error
    return { message: { type: 'invalid', digest, issues: error.issues } }
  }
}

async function serve(port: MessagePort, request: ReloadRequest): Promise<void> {
  const { message, records } = await verdict(request)
  port.postMessage(message)
  if (records === undefined) return
  let next = 0
  port.on('message', () => {
    const slice = records.slice(next, next + request.slice)
    next += slice.length
    port.postMessage({
      type: 'slice',
      records: slice,
      last: next >= records.length,
    } satisfies ReloadMessage)
  })
}

if (parentPort !== null) void serve(parentPort, workerData as ReloadRequest)
