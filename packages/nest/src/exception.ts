import { HttpException, HttpStatus } from '@nestjs/common'

/** The message a rejection carries unless `errorMessage` says otherwise. */
export const throttlerMessage = 'ThrottlerException: Too Many Requests'

/** A 429: thrown by the guard when a throttler refuses the request. */
export class ThrottlerException extends HttpException {
  constructor(message?: string) {
    super(`${message || throttlerMessage}`, HttpStatus.TOO_MANY_REQUESTS)
  }
}
