import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';

// No rawBody option needed: pixhook's route reads the raw bytes ahead of Nest's body parsers.
// With the Fastify platform: NestFactory.create(AppModule, new FastifyAdapter()).
const app = await NestFactory.create(AppModule);
app.enableShutdownHooks();
await app.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
