'use strict'
// The Nest servers of bench/instructions.js: node bench/http/server.js nest-express|nest-fastify
// <variant>. One controller answering GET / with 'hello'; the limiter is ThrottlerModule with
// ThrottlerGuard as APP_GUARD, @sluice/nest's (`sluice-memory`) or @nestjs/throttler's own
// (`peer-memory`), with the same throttler. The floor is a global guard that only sets
// @nestjs/throttler's three headers; the 429 floor one that answers as its 429 does (Retry-After
// and ThrottlerException's JSON body), what either guard's 429 costs at least.
require('reflect-metadata')
const { Controller, Get, HttpException, Module } = require('@nestjs/common')
const { APP_GUARD, NestFactory } = require('@nestjs/core')

class Root {
  root() {
    return 'hello'
  }
}
Controller()(Root)
Get()(Root.prototype, 'root', Object.getOwnPropertyDescriptor(Root.prototype, 'root'))

/** The floor guards: the headers alone, or the 429 alone (see the file's comment). */
function floorGuard(reject, limit, windowMs) {
  return {
    canActivate(context) {
      const res = context.switchToHttp().getResponse()
      if (reject) {
        res.header('Retry-After', windowMs / 1000)
        throw new HttpException('ThrottlerException: Too Many Requests', 429)
      }
      res.header('X-RateLimit-Limit', limit)
      res.header('X-RateLimit-Remaining', limit - 1)
      res.header('X-RateLimit-Reset', windowMs / 1000)
      return true
    },
  }
}

/** The module of a variant: no guard, a floor guard, or a ThrottlerModule and its guard. */
function appModule(kind, reject, limit, windowMs) {
  const imports = []
  const providers = []
  if (kind === 'floor')
    providers.push({ provide: APP_GUARD, useValue: floorGuard(reject, limit, windowMs) })
  if (kind === 'sluice-memory' || kind === 'peer-memory') {
    const throttler = require(kind === 'peer-memory' ? '@nestjs/throttler' : '@sluice/nest')
    imports.push(throttler.ThrottlerModule.forRoot([{ limit, ttl: windowMs }]))
    providers.push({ provide: APP_GUARD, useClass: throttler.ThrottlerGuard })
  }
  class AppModule {}
  Module({ imports, controllers: [Root], providers })(AppModule)
  return AppModule
}

/** Starts the app on 127.0.0.1 and a free port; `collect` runs just before it listens. */
async function startNest(platform, kind, reject, { limit, windowMs, collect }) {
  const adapter =
    platform === 'express'
      ? new (require('@nestjs/platform-express').ExpressAdapter)()
      : new (require('@nestjs/platform-fastify').FastifyAdapter)()
  const app = await NestFactory.create(appModule(kind, reject, limit, windowMs), adapter, {
    logger: false,
  })
  collect()
  await app.listen(0, '127.0.0.1')
  return app.getHttpServer().address().port
}

module.exports = { startNest }
