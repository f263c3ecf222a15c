// An LLM gateway route that limits tokens per user: 20,000 a minute and 500,000 a day.
// A completion's cost is known only after it returns, so the route reserves an estimate
// (prompt + max_tokens) before calling the model, then settles: unused tokens are refunded
// into the window they were taken from, extra tokens are charged (up to the limit).
// Run: node examples/llm-gateway/app.js, then
//   curl -i -H 'x-user-id: u1' -H 'content-type: application/json' \
//     -d '{"prompt":"hello","max_tokens":200}' http://localhost:3000/v1/completions
const express = require('express')
const { createLimiter } = require('@sluice/core')

/** A rough token count of a prompt (about four characters a token), never below one. */
const estimatePromptTokens = (prompt) => Math.max(1, Math.ceil(prompt.length / 4))

/** Stands in for the model: echoes the prompt, and reports usage as a real API does. */
async function echoModel({ prompt, maxTokens }) {
  const completionTokens = Math.min(maxTokens, estimatePromptTokens(prompt))
  return {
    text: prompt,
    usage: { totalTokens: estimatePromptTokens(prompt) + completionTokens },
  }
}

/**
 * Builds the app. `model` is the upstream call; `limiterOptions` override the limiter's
 * (a store, a clock).
 */
function createApp({ model = echoModel, limiterOptions = {} } = {}) {
  const tokens = createLimiter({
    limits: [
      { limit: 20_000, window: '1m', algorithm: 'fixed-window', name: 'tokens-per-minute' },
      { limit: 500_000, window: '1d', algorithm: 'fixed-window', name: 'tokens-per-day' },
    ],
    ...limiterOptions,
  })
  const app = express()
  app.use(express.json())

  app.post('/v1/completions', async (req, res, next) => {
    const user = req.get('x-user-id')
    const { prompt, max_tokens: maxTokens } = req.body ?? {}
    if (!user) return res.status(401).json({ error: 'x-user-id is required' })
    if (typeof prompt !== 'string' || !Number.isSafeInteger(maxTokens) || maxTokens < 1) {
      return res.status(400).json({ error: 'prompt (string) and max_tokens (>= 1) are required' })
    }
    const reserved = estimatePromptTokens(prompt) + maxTokens
    const decision = await tokens.consume(user, { cost: reserved })
    const at = decision.at // when the reservation was taken: refunds go back into its windows
    if (!decision.allowed) {
      res.set('Retry-After', String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))))
      return res.status(429).json({ error: 'token budget exceeded', reserved })
    }
    let completion
    try {
      completion = await model({ prompt, maxTokens })
    } catch (error) {
      // Nothing was generated: give the whole reservation back.
      await tokens.refund(user, { cost: reserved, at })
      return next(error)
    }
    const used = completion.usage.totalTokens
    await settle(tokens, user, reserved, used, at)
    res.json({ text: completion.text, usage: { reserved, used } })
  })

  return { app, tokens }
}

/**
 * Brings the charge from the reservation to what was used: the unused part refunded into the
 * window it was taken in (`at`), an overshoot charged now, up to full (never past the limit).
 */
async function settle(limiter, key, reserved, used, at) {
  if (used < reserved) await limiter.refund(key, { cost: reserved - used, at })
  else if (used > reserved) await limiter.penalize(key, used - reserved)
}

module.exports = { createApp, settle, estimatePromptTokens }

if (require.main === module) {
  const port = Number(process.env.PORT) || 3000
  createApp().app.listen(port, () => console.log(`llm-gateway on http://localhost:${port}/`))
}
