import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { PixhookModule } from '@pixhook/nestjs';
import { ImageWebhooks } from './image-webhooks.js';
import { ImagesService } from './images.service.js';

@Module({
  imports: [
    ConfigModule.forRoot({ isGlobal: true }),
    // The secret from the environment (SIGNING_SECRET), through ConfigService. The route is
    // POST /webhooks; the app's other routes keep Nest's JSON parsing.
    PixhookModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        secret: config.getOrThrow<string>('SIGNING_SECRET'),
        path: '/webhooks',
      }),
    }),
  ],
  providers: [ImagesService, ImageWebhooks],
})
export class AppModule {}
