/**
 * allowList and denyList on a request without a client address whose key was found: the lists
 * match the key alone, and the request stays limited under it.
 */
import { rateLimit } from '@sluice/fetch'

const statusesOf = async (
  extra: Parameters<typeof rateLimit>[0],
  headers: Record<string, string>,
): Promise<Array<number | string>> => {
  const warnings: string[] = []
  const limited = rateLimit({
    limit: 2,
    window: '1m',
    key: (req: Request) => req.headers.get('x-user') ?? undefined,
    ip: (req: Request) => req.headers.get('cf-connecting-ip') ?? undefined,
    logger: { warn: (message: string) => void warnings.push(message) },
    ...extra,
  })
  const statuses: Array<number | string> = []
  for (let i = 0; i < 4; i++) {
    const answer = await limited(
      new Request('https://x.test/', { headers }),
      () => new Response('ok'),
    ).then(
      (response) => response.status,
      (error: Error) => `threw ${error.name}`,
    )
    statuses.push(answer)
  }
  expect(warnings).toEqual([])
  return statuses
}

describe.each(['skip', 'throw'] as const)('onMissingAddress %s', (onMissingAddress) => {
  const noAddress = { 'x-user': 'alice' }

  test('allowList: a key not listed is limited, a listed key passes', async () => {
    expect(await statusesOf({ allowList: ['10.0.0.1'], onMissingAddress }, noAddress)).toEqual([
      200, 200, 429, 429,
    ])
    expect(await statusesOf({ allowList: ['alice'], onMissingAddress }, noAddress)).toEqual([
      200, 200, 200, 200,
    ])
  })

  test('denyList: a key not listed is limited, a listed key refused', async () => {
    expect(await statusesOf({ denyList: ['10.0.0.0/8'], onMissingAddress }, noAddress)).toEqual([
      200, 200, 429, 429,
    ])
    expect(await statusesOf({ denyList: ['alice'], onMissingAddress }, noAddress)).toEqual([
      403, 403, 403, 403,
    ])
  })
})
