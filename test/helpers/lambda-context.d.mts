import type { Context } from 'aws-lambda';

/** A fresh Lambda context for one invocation: its own `awsRequestId`, a deadline `timeoutMs` (default 10 s) from now. */
export function lambdaContext(timeoutMs?: number): Context;
