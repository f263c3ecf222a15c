/**
 * Owns reading a file the user named within bounds (a rules file, a simulation trace): only a
 * regular file (never a device, a pipe or a folder, which may never end or block) of at most a
 * given size.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'

/** Why a file was not read: a system error code, or what is wrong with it. */
export class UnreadableFile extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

/**
 * The text of `file`, of at most `maxBytes`; throws UnreadableFile. Synchronous: for start-up,
 * the CLI and worker threads.
 */
export function readBoundedText(file: string, maxBytes: number): string {
  let fd: number
  try {
    // Non-blocking, so that opening a FIFO does not wait for a writer.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (error) {
    throw new UnreadableFile((error as NodeJS.ErrnoException).code ?? String(error))
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) throw new UnreadableFile('not a regular file')
    if (stat.size > maxBytes) throw new UnreadableFile(tooLarge(stat.size, maxBytes))
    // Read to the end, not to the size first seen: a file growing past the bound is refused.
    const chunks: Buffer[] = []
    let length = 0
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(Math.max(stat.size - length + 1, 1 << 16), 1 << 20))
      const read = readSync(fd, chunk, 0, chunk.length, null)
      if (read === 0) break
      length += read
      if (length > maxBytes) throw new UnreadableFile(tooLarge(length, maxBytes))
      chunks.push(chunk.subarray(0, read))
    }
    return Buffer.concat(chunks, length).toString('utf8')
  } catch (error) {
    if (error instanceof UnreadableFile) throw error
    throw new UnreadableFile((error as NodeJS.ErrnoException).code ?? String(error))
  } finally {
    closeSync(fd)
  }
}

function tooLarge(size: number, maxBytes: number): string {
  return `${size} bytes or more; it may be at most ${maxBytes} bytes (${maxBytes / 1024 / 1024} MiB)`
}
