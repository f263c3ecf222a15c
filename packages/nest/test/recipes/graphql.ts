import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo'
import { Injectable, Module, type ExecutionContext } from '@nestjs/common'
import { APP_GUARD } from '@nestjs/core'
import { GqlExecutionContext, GraphQLModule, Query, Resolver } from '@nestjs/graphql'
import { seconds, ThrottlerGuard, ThrottlerModule } from '@sluice/nest'

@Injectable()
export class GqlThrottlerGuard extends ThrottlerGuard {
  protected override getRequestResponse(context: ExecutionContext) {
    const ctx = GqlExecutionContext.create(context).getContext()
    return { req: ctx.req, res: ctx.res }
  }
}

@Resolver()
export class GreetingResolver {
  @Query(() => String)
  hello() {
    return 'hello'
  }
}

@Module({
  imports: [
    ThrottlerModule.forRoot([{ limit: 2, ttl: seconds(60) }]),
    GraphQLModule.forRoot<ApolloDriverConfig>({
      driver: ApolloDriver,
      autoSchemaFile: true,
      // The platform's request and response, where the guard finds them. On Fastify, Apollo
      // passes them as two arguments: context: (req, res) => ({ req, res }).
      context: ({ req, res }: { req: unknown; res: unknown }) => ({ req, res }),
    }),
  ],
  providers: [GreetingResolver, { provide: APP_GUARD, useClass: GqlThrottlerGuard }],
})
export class AppModule {}
