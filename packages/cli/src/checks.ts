import { Webhooks } from '@pixhook/core';

/**
 * Why `value` is not a receiver URL (not a URL, or not http:// or https://), or undefined. The
 * URL to use is then `new URL(value).href`.
 *
 * @example
 * receiverUrlProblem('localhost:3000/webhooks') // 'expected an http:// or https:// URL.'
 * receiverUrlProblem('http://localhost:3000/webhooks') // undefined
 */
export function receiverUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected a URL such as http://localhost:3000/webhooks.';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'expected an http:// or https:// URL.';
  return undefined;
}

/**
 * Why a receiver would refuse this signing secret (empty, white space at either end), from core's
 * own checks, or undefined. Core's messages never quote the secret.
 *
 * @example
 * secretProblem(' whsec_x') // 'secret has leading or trailing white space (a copied newline?); …'
 */
export function secretProblem(secret: string): string | undefined {
  try {
    new Webhooks({ secret, store: false });
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^pixhook: /, '');
  }
}
