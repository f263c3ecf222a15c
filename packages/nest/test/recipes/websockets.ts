import {
  Catch,
  Injectable,
  Module,
  UseFilters,
  UseGuards,
  type ArgumentsHost,
  type ExceptionFilter,
} from '@nestjs/common'
import { MessageBody, SubscribeMessage, WebSocketGateway } from '@nestjs/websockets'
import {
  seconds,
  ThrottlerException,
  ThrottlerGuard,
  ThrottlerModule,
  type ThrottlerRequest,
} from '@sluice/nest'

@Injectable()
export class WsThrottlerGuard extends ThrottlerGuard {
  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, blockDuration, generateKey } = props
    const name = throttler.name ?? 'default'
    const client = context.switchToWs().getClient()
    const tracker = client._socket.remoteAddress
    const key = generateKey(context, tracker, name)
    const record = await this.storageService.increment(key, ttl, limit, blockDuration, name)
    if (record.isBlocked) {
      await this.throwThrottlingException(context, { limit, ttl, key, tracker, ...record })
    }
    return true
  }
}

// Nest's default filter for gateways tells a `ws` client nothing: this one sends the refusal.
@Catch(ThrottlerException)
export class WsThrottlerFilter implements ExceptionFilter {
  catch(exception: ThrottlerException, host: ArgumentsHost) {
    const client = host.switchToWs().getClient<{ send(data: string): void }>()
    client.send(JSON.stringify({ event: 'throttled', data: exception.message }))
  }
}

@UseFilters(WsThrottlerFilter)
@UseGuards(WsThrottlerGuard)
@WebSocketGateway()
export class EventsGateway {
  @SubscribeMessage('events')
  events(@MessageBody() data: string) {
    return { event: 'events', data }
  }
}

@Module({
  imports: [ThrottlerModule.forRoot([{ limit: 2, ttl: seconds(60) }])],
  providers: [EventsGateway],
})
export class AppModule {}
