/**
 * What the Nest tests share: an app on either platform, listening on 127.0.0.1, closed after
 * each test, and a clock the tests move by hand.
 */
import 'reflect-metadata'
import { Controller, Get, type INestApplication, type ModuleMetadata } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { Test } from '@nestjs/testing'
import type { Server } from 'node:http'
import request from 'supertest'
import { ThrottlerGuard } from '@sluice/nest'

export type Platform = 'Express' | 'Fastify'
export const PLATFORMS: Platform[] = ['Express', 'Fastify']

const open: INestApplication[] = []

afterEach(async () => {
  await Promise.all(open.splice(0).map((app) => app.close()))
})

/** Starts a Nest app of `metadata` on `platform`; `trustProxy` trusts the loopback hop. */
export async function boot(platform: Platform, metadata: ModuleMetadata, trustProxy = false) {
  const moduleRef = await Test.createTestingModule(metadata).compile()
  const adapter =
    platform === 'Express'
      ? new ExpressAdapter()
      : new FastifyAdapter(trustProxy ? { trustProxy: '127.0.0.1' } : {})
  const app = moduleRef.createNestApplication(adapter, { logger: false })
  open.push(app)
  if (platform === 'Express' && trustProxy) {
    ;(app as NestExpressApplication).set('trust proxy', 'loopback')
  }
  await app.listen(0, '127.0.0.1')
  return { app, agent: request(app.getHttpServer() as Server) }
}

/** A minute-aligned clock that stands still until moved. */
export function manualClock() {
  const clock = { now: 60_000 * 30_000, read: () => clock.now }
  return clock
}

/** A logger that keeps warnings for assertions. */
export function warnings() {
  const seen: string[] = []
  return { seen, warn: (message: string) => void seen.push(message) }
}

/** A controller with one route, GET / (its handler is named `root`). */
@Controller()
export class RootController {
  @Get()
  root() {
    return { ok: true }
  }
}

/** ThrottlerGuard on every route. */
export const appGuard = { provide: APP_GUARD, useClass: ThrottlerGuard }
