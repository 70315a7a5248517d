import { Injectable } from '@nestjs/common';

/** Your own service: what the webhook handlers call. Here it keeps what it was told in memory. */
@Injectable()
export class ImagesService {
  readonly indexed = new Map<string, unknown>();
  readonly removed = new Set<string>();

  async index(imageId: string, image: unknown): Promise<void> {
    this.indexed.set(imageId, image);
  }

  async remove(imageId: string): Promise<void> {
    this.removed.add(imageId);
  }
}
