/**
 * The project's HTTP suite through a Nest app, on both platforms: `rateLimitGuard` (Sluice's own
 * options as a global guard) answers as the plain adapters do.
 */
import 'reflect-metadata'
import { Controller, Get, HttpCode, Module, Req, type INestApplication } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter, type NestExpressApplication } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import type { Server } from 'node:http'
import { runHttpScenarios, type AdapterHarness, type ScenarioSetup } from '@sluice/testkit'
import { rateLimitGuard, type Decision } from '@sluice/nest'

/** The scenarios' two routes: `/` answers the decision's remaining, `/bad` a 400. */
function routesFor(setup: ScenarioSetup) {
  @Controller()
  class Routes {
    @Get()
    root(@Req() req: { rateLimit?: Decision }) {
      setup.onHandled?.()
      return { ok: true, remaining: req.rateLimit?.remaining ?? null }
    }

    @Get('bad')
    @HttpCode(400)
    bad() {
      setup.onHandled?.()
      return { ok: false }
    }
  }
  @Module({ controllers: [Routes] })
  class ScenarioModule {}
  return ScenarioModule
}

function harness(platform: 'Express' | 'Fastify'): AdapterHarness {
  return {
    name: `NestJS 11 on ${platform}`,
    resetStyle: 'delta',
    async start(options, setup = {}) {
      const guard = rateLimitGuard(options)
      const trust = setup.trustProxy === true
      const adapter =
        platform === 'Express'
          ? new ExpressAdapter()
          : new FastifyAdapter(trust ? { trustProxy: '127.0.0.1' } : {})
      const app: INestApplication = await NestFactory.create(routesFor(setup), adapter, {
        logger: false,
      })
      if (platform === 'Express' && trust) {
        ;(app as NestExpressApplication).set('trust proxy', 'loopback')
      }
      app.useGlobalGuards(guard)
      await app.listen(0, '127.0.0.1')
      return {
        server: app.getHttpServer() as Server,
        close: async () => {
          guard.close()
          await app.close()
        },
      }
    },
  }
}

runHttpScenarios(harness('Express'))
runHttpScenarios(harness('Fastify'))
