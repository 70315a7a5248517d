import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { PixhookModuleOptions } from './options.js';

/**
 * `forRoot(options)` and `forRootAsync({ imports, useFactory, inject } | { useClass } |
 * { useExisting })`, from Nest's own builder, so they behave as every other Nest module's do.
 */
export const {
  ConfigurableModuleClass: PixhookConfigurableModule,
  MODULE_OPTIONS_TOKEN: PIXHOOK_MODULE_OPTIONS,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<PixhookModuleOptions>({ moduleName: 'Pixhook' })
  .setClassMethodName('forRoot')
  .build();

/** `PixhookModule.forRootAsync()` options: `imports`, `useFactory` and `inject`, `useClass` or `useExisting`. */
export type PixhookModuleAsyncOptions = typeof ASYNC_OPTIONS_TYPE;
