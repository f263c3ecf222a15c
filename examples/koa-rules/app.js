// Koa app whose limits live in rules.yaml (docs/rules.md), hot-reloaded when the file changes.
// Every rule a request matches (per route, per user, per user on a route) is enforced in one
// all-or-nothing store call.
// Run: node examples/koa-rules/app.js, then
//   curl -i -X POST -H 'x-user: alice' http://localhost:3000/login   (3rd within a minute: 429)
//   curl -i -H 'x-user: admin' http://localhost:3000/anything        (exempt: no headers)
const path = require('node:path')
const Koa = require('koa')
const { rateLimit } = require('@sluice/koa')

const RULES = path.join(__dirname, 'rules.yaml')

function createApp(options = {}) {
  const app = new Koa()
  app.use(
    rateLimit({
      rules: RULES,
      // The request's descriptor entries; an undefined value (no x-user) matches no user rule.
      descriptors: (ctx) => [
        ['route', ctx.path],
        ['user', ctx.get('x-user') || undefined],
      ],
      standardHeaders: 'draft-8',
      ...options,
    }),
  )
  app.use(async (ctx) => {
    const decision = ctx.state.rateLimit
    ctx.body = {
      path: ctx.path,
      // Absent when no enforced rule matched (no headers either).
      rule: decision?.policy.name ?? null,
      remaining: decision?.remaining ?? null,
    }
  })
  return app
}

module.exports = { createApp }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp().listen(port, () =>
    console.log(`koa-rules on http://localhost:${port}/ (rules: ${RULES})`),
  )
}
