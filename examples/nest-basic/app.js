// Nest app limited by @sluice/nest, the drop-in for @nestjs/throttler: 3 requests a second and
// 20 a minute per client, a stricter POST /login, an unlimited GET /health; on Express or Fastify.
// Run: node examples/nest-basic/app.js [fastify], then curl -i http://localhost:3000/
// Plain JavaScript, so the decorators are called as functions; in TypeScript they are the usual
// @Controller(), @Get(), @Throttle(...), @SkipThrottle(...) and @Module(...) (docs/nest.md).
require('reflect-metadata')
const { Controller, Get, Module, Post } = require('@nestjs/common')
const { APP_GUARD, NestFactory } = require('@nestjs/core')
const { ExpressAdapter } = require('@nestjs/platform-express')
const { FastifyAdapter } = require('@nestjs/platform-fastify')
const {
  minutes,
  seconds,
  SkipThrottle,
  Throttle,
  ThrottlerGuard,
  ThrottlerModule,
} = require('@sluice/nest')

class AppController {
  hello() {
    return { hello: 'world' }
  }
  login() {
    return { ok: true }
  }
  health() {
    return { ok: true }
  }
}
/** Applies method decorators as TypeScript would. */
function decorate(type, method, ...decorators) {
  const descriptor = Object.getOwnPropertyDescriptor(type.prototype, method)
  for (const decorator of decorators.reverse()) decorator(type.prototype, method, descriptor)
}
decorate(AppController, 'hello', Get())
decorate(AppController, 'login', Post('login'), Throttle({ short: { limit: 1, ttl: seconds(5) } }))
decorate(AppController, 'health', Get('health'), SkipThrottle({ short: true, long: true }))
Controller()(AppController)

class AppModule {}
Module({
  imports: [
    ThrottlerModule.forRoot([
      { name: 'short', limit: 3, ttl: seconds(1) },
      { name: 'long', limit: 20, ttl: minutes(1) },
    ]),
  ],
  controllers: [AppController],
  providers: [{ provide: APP_GUARD, useClass: ThrottlerGuard }],
})(AppModule)

/** The app on Express (default) or Fastify, not yet listening. */
async function createApp(platform = 'express') {
  const adapter = platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter()
  return NestFactory.create(AppModule, adapter, { logger: false })
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp(process.argv[2])
    .then((app) => app.listen(port).then(() => app.getUrl()))
    .then((url) => console.log(`nest-basic on ${url}/`))
}
