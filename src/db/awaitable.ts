/**
 * A store's interface over either engine. SQLite stores answer synchronously
 * (bun:sqlite: a paid request's reads cost microseconds, and a synchronous
 * transaction is what makes a claim atomic in one process); PostgreSQL
 * stores answer with promises. The interface the app holds is the SQLite
 * store's methods made awaitable, so both implement it, every caller in the
 * app awaits, and a test that made a SQLite store itself keeps its
 * synchronous type.
 */
// biome-ignore lint/suspicious/noExplicitAny: the widest function type, to map every method.
type Method = (...args: any[]) => unknown;

/** Every method of `T` may answer with its value or a promise of it, but those named in `Sync` (no database behind them). */
export type Awaitable<T, Sync extends keyof T = never> = {
  [K in keyof T]: K extends Sync
    ? T[K]
    : T[K] extends Method
      ? (...args: Parameters<T[K]>) => ReturnType<T[K]> | Promise<ReturnType<T[K]>>
      : T[K];
};

/** Every method of `T` answers with a promise: what a PostgreSQL store declares, checked against the SQLite one. */
export type Async<T> = {
  [K in keyof T]: T[K] extends Method ? (...args: Parameters<T[K]>) => Promise<ReturnType<T[K]>> : T[K];
};

/**
 * `fn(value)` at once when the value is there, after it when it is a
 * promise. What a write spanning stores is made of: in a SQLite transaction
 * every step runs synchronously (an `await` there would commit the
 * transaction early), on PostgreSQL each step awaits the one before.
 */
export function then<T, R>(value: T | Promise<T>, fn: (value: T) => R | Promise<R>): R | Promise<R> {
  return value instanceof Promise ? value.then(fn) : fn(value);
}

/** Whatever a store's method may answer: the value, or a promise of it. */
export type MaybePromise<T> = T | Promise<T>;
