/**
 * The WebSocket recipe of docs/nest.md (recipes/websockets.ts) in a real gateway (@nestjs/platform-ws)
 * on Express and on Fastify: the guard tracks the socket's address and counts through the
 * injected storage, so each client address gets its limit of messages, a new connection from
 * the same address does not start afresh, and the message over the limit is refused before the
 * handler runs (its answer is the filter's, not the handler's echo).
 */
import { WsAdapter } from '@nestjs/platform-ws'
import { Test } from '@nestjs/testing'
import type { AddressInfo } from 'node:net'
import WebSocket from 'ws'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import type { INestApplication } from '@nestjs/common'
import { PLATFORMS } from './helpers'
import { AppModule } from './recipes/websockets'

interface Message {
  event: string
  data: string
}

/** A client connected from `localAddress`, whose `send` resolves with the gateway's answer. */
async function connect(port: number, localAddress = '127.0.0.1') {
  const socket = new WebSocket(`ws://127.0.0.1:${port}`, { localAddress })
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  const send = (data: string) =>
    new Promise<Message>((resolve) => {
      socket.once('message', (raw) => resolve(JSON.parse(String(raw)) as Message))
      socket.send(JSON.stringify({ event: 'events', data }))
    })
  const close = () =>
    new Promise((resolve) => {
      socket.once('close', resolve)
      socket.close()
    })
  return { send, close }
}

const refusal = { event: 'throttled', data: 'ThrottlerException: Too Many Requests' }

describe.each(PLATFORMS)(
  'WebSockets on %s (ws): the guard overriding handleRequest',
  (platform) => {
    let app: INestApplication
    afterEach(async () => {
      await app?.close()
    })

    test('2 messages a minute per client address; the third refused before the handler', async () => {
      const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile()
      app = moduleRef.createNestApplication(
        platform === 'Express' ? new ExpressAdapter() : new FastifyAdapter(),
        { logger: false },
      )
      app.useWebSocketAdapter(new WsAdapter(app))
      await app.listen(0, '127.0.0.1')
      const { port } = app.getHttpServer().address() as AddressInfo

      const first = await connect(port)
      expect(await first.send('a')).toEqual({ event: 'events', data: 'a' })
      expect(await first.send('b')).toEqual({ event: 'events', data: 'b' })
      expect(await first.send('c')).toEqual(refusal)

      // Another address has its own count; a new connection from the first does not.
      const other = await connect(port, '127.0.0.2')
      expect(await other.send('d')).toEqual({ event: 'events', data: 'd' })
      const again = await connect(port)
      expect(await again.send('e')).toEqual(refusal)
      await Promise.all([first.close(), other.close(), again.close()])
    }, 60_000) // booting Nest and its server is slow on a loaded machine
  },
)
