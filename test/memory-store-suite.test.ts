import { MemoryStore } from '@pixhook/core';
import { describeStoreSuite } from './helpers/store-suite.js';

describeStoreSuite('MemoryStore', (options) => new MemoryStore(options));
