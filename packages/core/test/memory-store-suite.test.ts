import { MemoryStore } from '@pixhook/core';
import { describeStoreSuite } from '@pixhook/test-helpers/store-suite';
import { describe } from 'vitest';

// Each test has its own store and event ids; most of the table waits for TTLs to lapse, so the tests
// run side by side instead of one sleep after another.
describeStoreSuite('MemoryStore', (options) => new MemoryStore(options), describe.concurrent);
