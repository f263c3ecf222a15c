/**
 * The GraphQL recipe of docs/nest.md (recipes/graphql.ts) in a real Apollo server on Express and
 * on Fastify: the guard finds the platform's request and response in the resolver's context, so
 * a query is counted per client and resolver, with the headers on the HTTP response, and the one
 * over the limit is refused with ThrottlerException before the resolver runs (`data` is null).
 */
import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo'
import { Module, type Type } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { GraphQLModule } from '@nestjs/graphql'
import { request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { seconds, ThrottlerModule } from '@sluice/nest'
import { boot, type Platform } from './helpers'
import { AppModule, GqlThrottlerGuard, GreetingResolver } from './recipes/graphql'

/** The recipe's module with Fastify's context, as the recipe's comment gives it. */
@Module({
  imports: [
    ThrottlerModule.forRoot([{ limit: 2, ttl: seconds(60) }]),
    GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      context: (req: unknown, res: unknown) => ({ req, res }),
    }),
  ],
  providers: [GreetingResolver, { provide: APP_GUARD, useClass: GqlThrottlerGuard }],
})
class FastifyAppModule {}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: { data?: unknown; errors?: Array<{ message: string; extensions?: { code?: string } }> }
}

/** POSTs `{ hello }` to /graphql from `localAddress` (127.0.0.2 is another client on loopback). */
function query(port: number, localAddress = '127.0.0.1'): Promise<Answer> {
  const payload = JSON.stringify({ query: '{ hello }' })
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        path: '/graphql',
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': payload.length },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => (text += chunk))
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }),
        )
      },
    )
    req.on('error', reject)
    req.end(payload)
  })
}

describe.each<[Platform, Type]>([
  ['Express', AppModule],
  ['Fastify', FastifyAppModule],
])('GraphQL on %s (Apollo): the guard overriding getRequestResponse', (platform, module) => {
  test('2 queries a minute per client: headers, then ThrottlerException before the resolver', async () => {
    const { app } = await boot(platform, { imports: [module] })
    const { port } = app.getHttpServer().address() as AddressInfo

    for (const remaining of ['1', '0']) {
      const admitted = await query(port)
      expect(admitted.status).toBe(200)
      expect(admitted.body).toEqual({ data: { hello: 'hello' } })
      expect(admitted.headers['x-ratelimit-limit']).toBe('2')
      expect(admitted.headers['x-ratelimit-remaining']).toBe(remaining)
      expect(admitted.headers['x-ratelimit-reset']).toBe('60')
    }
    const refused = await query(port)
    expect(refused.body.data).toBeNull()
    expect(refused.body.errors).toHaveLength(1)
    expect(refused.body.errors![0].message).toBe('ThrottlerException: Too Many Requests')
    expect(refused.headers['retry-after']).toBe('60')
    expect(refused.headers['x-ratelimit-remaining']).toBeUndefined()

    // Another client has its own count.
    const other = await query(port, '127.0.0.2')
    expect(other.body).toEqual({ data: { hello: 'hello' } })
    expect(other.headers['x-ratelimit-remaining']).toBe('1')
    // The first is still refused.
    const again = await query(port)
    expect(again.body.data).toBeNull()
    expect(again.body.errors![0].message).toBe('ThrottlerException: Too Many Requests')
  }, 60_000) // booting Nest and its server is slow on a loaded machine
})
