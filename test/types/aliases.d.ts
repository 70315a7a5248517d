// The test suite installs two majors of Express and Koa side by side under aliases.
declare module 'express4' {
  import express from 'express';
  export = express;
}
declare module 'express5' {
  import express from 'express';
  export = express;
}
declare module 'koa2' {
  import Koa from 'koa';
  export = Koa;
}
declare module 'koa3' {
  import Koa from 'koa';
  export = Koa;
}
