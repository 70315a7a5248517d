import { MemoryStore } from '@pixhook/core';
import { describeStoreSuite } from '@pixhook/test-helpers/store-suite';

describeStoreSuite('MemoryStore', (options) => new MemoryStore(options));
