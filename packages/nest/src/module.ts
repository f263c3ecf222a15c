/**
 * Owns ThrottlerModule: registers the options and the storage (global, as @nestjs/throttler's),
 * synchronously or from a factory.
 */
import { Global, Module, type DynamicModule, type Provider } from '@nestjs/common'
import { checkModuleOptions, objectForm } from './check-options'
import { THROTTLER_OPTIONS } from './constants'
import type {
  ThrottlerAsyncOptions,
  ThrottlerModuleOptions,
  ThrottlerOptionsFactory,
} from './options'
import { ThrottlerStorage } from './storage'
import { ThrottlerStorageService } from './storage-service'

/** The storage: the module's own `storage`, else Sluice's over the module's `store`. */
const storageProvider: Provider = {
  provide: ThrottlerStorage,
  useFactory: (options: ThrottlerModuleOptions) => {
    const common = objectForm(options)
    return (
      common.storage ?? new ThrottlerStorageService({ store: common.store, clock: common.clock })
    )
  },
  inject: [THROTTLER_OPTIONS],
}

function asyncOptionsProvider(options: ThrottlerAsyncOptions): Provider {
  if (options.useFactory) {
    return {
      provide: THROTTLER_OPTIONS,
      useFactory: options.useFactory,
      inject: options.inject ?? [],
    }
  }
  return {
    provide: THROTTLER_OPTIONS,
    useFactory: async (factory: ThrottlerOptionsFactory) => await factory.createThrottlerOptions(),
    inject: [(options.useExisting ?? options.useClass)!],
  }
}

@Global()
@Module({})
export class ThrottlerModule {
  /** Registers the throttlers now; a bad option throws a ConfigError naming it. */
  static forRoot(options: ThrottlerModuleOptions = []): DynamicModule {
    checkModuleOptions(options, objectForm(options).logger ?? console)
    const providers: Provider[] = [
      { provide: THROTTLER_OPTIONS, useValue: options },
      storageProvider,
    ]
    return { module: ThrottlerModule, providers, exports: providers }
  }

  /** Registers the throttlers from a factory, a class or an existing provider (checked when the guard starts). */
  static forRootAsync(options: ThrottlerAsyncOptions): DynamicModule {
    const providers: Provider[] = [asyncOptionsProvider(options), storageProvider]
    if (!options.useExisting && !options.useFactory && options.useClass) {
      providers.push({ provide: options.useClass, useClass: options.useClass })
    }
    return {
      module: ThrottlerModule,
      imports: options.imports ?? [],
      providers,
      exports: providers,
    }
  }
}
