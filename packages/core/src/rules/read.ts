/**
 * Owns reading a rules file within bounds: only a regular file (never a device, a pipe or a
 * folder, which may never end or block) of at most MAX_RULES_BYTES.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import { MAX_RULES_BYTES } from './bounds'

/** Why a file was not read: a system error code, or what is wrong with it. */
export class UnreadableRules extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

/** The text of `file`; throws UnreadableRules. Synchronous: start-up, the CLI and the reload worker. */
export function readBoundedText(file: string): string {
  let fd: number
  try {
    // Non-blocking, so that opening a FIFO does not wait for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    throw new UnreadableRules((error as NodeJS.ErrnoException).code ?? String(error))
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw new UnreadableRules('not a regular file')
    if (stat.size > MAX_RULES_BYTES) throw new UnreadableRules(tooLarge(stat.size))
    // Read to the end, not to the size first seen: a file growing past the bound is refused.
    const chunks: Buffer[] = []
    let length = 0
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(Math.max(stat.size - length + 1, 1 << 16), 1 << 20))
      const read = readSync(fd, chunk, 0, chunk.length, null)
      if (read === 0) break
      length += read
      if (length > MAX_RULES_BYTES) throw new UnreadableRules(tooLarge(length))
      chunks.push(chunk.subarray(0, read))
    }
    return Buffer.concat(chunks, length).toString('utf8')
  } catch (error) {
    if (error instanceof UnreadableRules) throw error
    throw new UnreadableRules((error as NodeJS.ErrnoException).code ?? String(error))
  } finally {
    closeSync(fd)
  }
}

function tooLarge(size: number): string {
  return `${size} bytes or more; a rules file may be at most ${MAX_RULES_BYTES} bytes (8 MiB)`
}
