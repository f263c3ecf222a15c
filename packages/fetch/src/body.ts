/**
 * Owns knowing when a Response's body has been sent: a Fetch handler returns its Response before
 * the body is read (a stream, SSE, Hono's `stream()`), so the request ends only when the server
 * has read the body to its end, or the body errors, or the server cancels it (the client left).
 */

/** How a body ended: read to its end (`true`), or errored or cancelled (`false`). */
export type BodyEnd = (complete: boolean) => void

/**
 * `body` as a stream that calls `ended` once, when it has been read to its end, errors or is
 * cancelled. It pulls from `body` only as it is read itself (no high-water mark), so "read to
 * its end" is when the server took the last chunk, and a cancel reaches `body`.
 */
export function watchBody(
  body: ReadableStream<Uint8Array>,
  ended: BodyEnd,
): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  let open = true
  const end = (complete: boolean): void => {
    if (!open) return
    open = false
    ended(complete)
  }
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        let chunk: Awaited<ReturnType<typeof reader.read>>
        try {
          chunk = await reader.read()
        } catch (error) {
          end(false)
          controller.error(error)
          return
        }
        // Cancelled while the read was out: the stream is closed already.
        if (!open) return
        if (chunk.done) {
          end(true)
          controller.close()
        } else controller.enqueue(chunk.value)
      },
      cancel(reason) {
        end(false)
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}
