//! Identical reads asked for at the same time share one statement.
//!
//! Under load, many requests ask for the same page at the same moment
//! (dashboards polling a first page, a client retrying). Each would cost
//! the database the same statement. Here a read of a key that arrives while
//! a statement for that key is out waits for the *next* statement, sent as
//! soon as the one out has answered, and that statement answers everyone
//! who arrived in between.
//!
//! A read never takes the answer of a statement sent before it arrived:
//! the statement it shares begins after its request came in, so it sees
//! every commit that was visible then, exactly as a read of its own would.
//! One statement per key is out at a time: a read waits for at most the
//! rest of the statement out and one more, and a burst of identical reads
//! costs the database two statements instead of one each.
//!
//! A read that finds nothing out for its key sends the statement itself,
//! on its own task, as an unshared read would. The statements for reads
//! that arrived meanwhile go on a task of their own: a caller that goes
//! away (its client hung up) takes nobody else's answer with it.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use crate::store::driver::within;
use crate::store::error::StoreError;
use crate::store::listing::ListingKey;
use crate::store::page::JsonPage;

type Answer<T> = Result<T, StoreError>;

/// A read waiting for a statement's answer.
type Waiter<T> = oneshot::Sender<Answer<T>>;

/// The keys with a statement out, each with the reads that arrived since
/// (for the next statement).
type Waiting<K, T> = Arc<Mutex<HashMap<K, Vec<Waiter<T>>>>>;

/// What sends a key's statement, as often as asked.
type Statement<T> = Box<dyn Fn() -> BoxFuture<'static, Answer<T>> + Send>;

/// The listing reads of a store.
pub struct SharedReads {
    reads: Reads<ListingKey, JsonPage>,
    /// How long a read waits for another's statement: `--db-timeout`, the
    /// bound of its own statement.
    bound: Duration,
}

impl SharedReads {
    pub fn new(bound: Duration) -> Self {
        Self {
            reads: Reads::default(),
            bound,
        }
    }
}

impl SharedReads {
    /// The page `key` names, from a `statement` sent after this call began:
    /// this read's own, or one it shares with identical reads.
    pub fn read<S, F>(&self, key: ListingKey, statement: S) -> BoxFuture<'static, Answer<JsonPage>>
    where
        S: Fn(ListingKey) -> F + Send + 'static,
        F: Future<Output = Answer<JsonPage>> + Send + 'static,
    {
        let shared = crate::metrics::shared_reads(key.listing().operation());
        let (reads, bound) = (self.reads.clone(), self.bound);
        Box::pin(async move {
            let statement_key = key.clone();
            reads
                .read(key, bound, &shared, move || {
                    statement(statement_key.clone())
                })
                .await
        })
    }
}

/// Reads of keys `K` answered `T`, identical ones at the same time sharing
/// a statement.
pub struct Reads<K, T> {
    waiting: Waiting<K, T>,
}

impl<K, T> Default for Reads<K, T> {
    fn default() -> Self {
        Self {
            waiting: Waiting::default(),
        }
    }
}

impl<K, T> Clone for Reads<K, T> {
    fn clone(&self) -> Self {
        Self {
            waiting: self.waiting.clone(),
        }
    }
}

impl<K, T> Reads<K, T>
where
    K: Hash + Eq + Clone + Send + 'static,
    T: Clone + Send + 'static,
{
    /// The answer of `statement` for `key` (everything that decides the
    /// answer), from a statement sent after this call began. A read that
    /// waits for another's statement waits `bound` at most, the bound of
    /// its own statement, and counts in `shared`.
    pub async fn read<S, F>(
        &self,
        key: K,
        bound: Duration,
        shared: &::metrics::Counter,
        statement: S,
    ) -> Answer<T>
    where
        S: Fn() -> F + Send + 'static,
        F: Future<Output = Answer<T>> + Send + 'static,
    {
        match self.join(key) {
            Joined::Next(answer) => {
                shared.increment(1);
                within(bound, async {
                    answer.await.unwrap_or_else(|_| {
                        Err(StoreError::Internal(
                            "a shared read ended without an answer".into(),
                        ))
                    })
                })
                .await
            }
            Joined::First(key) => {
                let mut statements = Statements {
                    waiting: self.waiting.clone(),
                    key: Some(key),
                    statement: Some(Box::new(move || Box::pin(statement()))),
                };
                let answer = statements.send().await;
                statements.pass_on();
                answer
            }
        }
    }

    /// Joins the reads waiting for `key`'s next statement, if one is out;
    /// marks `key` as having one out otherwise.
    fn join(&self, key: K) -> Joined<K, T> {
        match lock(&self.waiting).entry(key) {
            Entry::Occupied(mut next) => {
                let (waiter, answer) = oneshot::channel();
                next.get_mut().push(waiter);
                Joined::Next(answer)
            }
            Entry::Vacant(free) => {
                let key = free.key().clone();
                free.insert(Vec::new());
                Joined::First(key)
            }
        }
    }
}

/// Where a read found itself on joining.
enum Joined<K, T> {
    /// Waiting for the answer of the next statement of its key.
    Next(oneshot::Receiver<Answer<T>>),
    /// Nothing was out for its key: it sends the statement.
    First(K),
}

fn lock<K, T>(waiting: &Waiting<K, T>) -> MutexGuard<'_, HashMap<K, Vec<Waiter<T>>>> {
    // The map is consistent between any two statements: a panic elsewhere
    // leaves nothing half done.
    waiting.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The statements of one key, one after the other while reads keep
/// arriving. Its key is in the map while it holds its statement.
struct Statements<K: Hash + Eq + Clone + Send + 'static, T: Clone + Send + 'static> {
    waiting: Waiting<K, T>,
    /// `None` once freed.
    key: Option<K>,
    /// `None` once the key is passed on or freed.
    statement: Option<Statement<T>>,
}

impl<K: Hash + Eq + Clone + Send + 'static, T: Clone + Send + 'static> Statements<K, T> {
    fn send(&self) -> BoxFuture<'static, Answer<T>> {
        let statement = self.statement.as_ref().expect("sent while held");
        statement()
    }

    /// After a statement: the reads that arrived meanwhile, if any, get
    /// the next one, on a task of their own; otherwise the key is freed.
    fn pass_on(&mut self) {
        let Some(statement) = self.statement.take() else {
            return;
        };
        let Some(next) = self.take_next() else {
            return;
        };
        let statements = Statements {
            waiting: self.waiting.clone(),
            key: self.key.take(),
            statement: Some(statement),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn(statements.serve(next))),
            // No runtime to run them (it is going away): the reads are
            // answered by their channels' closing.
            Err(_) => drop(statements.free()),
        }
    }

    /// Answers `batch`, then each batch that arrived meanwhile, until none.
    async fn serve(mut self, mut batch: Vec<Waiter<T>>) {
        loop {
            let answer = self.send().await;
            let last = batch.pop();
            for waiter in batch {
                // A read whose caller went away no longer listens.
                let _ = waiter.send(answer.clone());
            }
            if let Some(waiter) = last {
                let _ = waiter.send(answer);
            }
            match self.take_next() {
                Some(next) => batch = next,
                None => {
                    self.statement = None;
                    return;
                }
            }
        }
    }

    /// The reads still waiting for the next statement; `None`, and the key
    /// freed, when there are none (those whose callers gave up or went
    /// away do not count).
    fn take_next(&self) -> Option<Vec<Waiter<T>>> {
        let key = self.key.as_ref()?;
        let mut waiting = lock(&self.waiting);
        let mut next = waiting.get_mut(key).map(std::mem::take)?;
        next.retain(|waiter| !waiter.is_closed());
        if next.is_empty() {
            waiting.remove(key);
            return None;
        }
        Some(next)
    }

    /// Frees the key; answers the reads that were waiting.
    fn free(mut self) -> Vec<Waiter<T>> {
        self.statement = None;
        match self.key.take() {
            Some(key) => lock(&self.waiting).remove(&key).unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

impl<K: Hash + Eq + Clone + Send + 'static, T: Clone + Send + 'static> Drop for Statements<K, T> {
    /// Dropped while holding its statement: the caller that sent it went
    /// away, or the statement panicked. The reads waiting still get one.
    fn drop(&mut self) {
        if self.statement.is_some() {
            self.pass_on();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tokio::sync::Semaphore;
    use tokio::task::JoinHandle;

    /// A database of one number: each statement answers the number as it
    /// was when the statement began, once the test lets it finish; the
    /// first `panics` statements panic instead.
    struct Database {
        number: AtomicU64,
        statements: AtomicU64,
        panics: AtomicU64,
        finish: Semaphore,
    }

    struct Test {
        reads: Reads<String, u64>,
        database: Arc<Database>,
    }

    impl Test {
        fn new() -> Self {
            let database = Database {
                number: AtomicU64::new(0),
                statements: AtomicU64::new(0),
                panics: AtomicU64::new(0),
                finish: Semaphore::new(0),
            };
            Self {
                reads: Reads::default(),
                database: Arc::new(database),
            }
        }

        /// A read of `key`, on a task of its own.
        fn read(&self, key: &str) -> JoinHandle<Answer<u64>> {
            self.read_within(key, Duration::from_secs(60))
        }

        /// A read of `key` that waits `bound` at most for another's
        /// statement.
        fn read_within(&self, key: &str, bound: Duration) -> JoinHandle<Answer<u64>> {
            let (reads, database, key) = (self.reads.clone(), self.database.clone(), key.into());
            tokio::spawn(async move {
                let statement = move || {
                    let database = database.clone();
                    async move {
                        let seen = database.number.load(Ordering::SeqCst);
                        database.statements.fetch_add(1, Ordering::SeqCst);
                        database.finish.acquire().await.expect("open").forget();
                        let panics = database.panics.load(Ordering::SeqCst);
                        if panics > 0 {
                            database.panics.store(panics - 1, Ordering::SeqCst);
                            panic!("a fault in the statement");
                        }
                        Ok(seen)
                    }
                };
                let shared = ::metrics::Counter::noop();
                reads.read(key, bound, &shared, statement).await
            })
        }

        fn statements(&self) -> u64 {
            self.database.statements.load(Ordering::SeqCst)
        }

        async fn until_statements(&self, count: u64) {
            while self.statements() < count {
                tokio::task::yield_now().await;
            }
        }

        /// Until `count` reads wait for `key`'s next statement.
        async fn until_waiting(&self, key: &str, count: usize) {
            while lock(&self.reads.waiting).get(key).map_or(0, Vec::len) < count {
                tokio::task::yield_now().await;
            }
        }

        fn finish(&self, statements: usize) {
            self.database.finish.add_permits(statements);
        }

        fn all_keys_free(&self) -> bool {
            lock(&self.reads.waiting).is_empty()
        }
    }

    #[tokio::test]
    async fn reads_arriving_during_a_statement_share_the_next_one_and_see_what_committed_before_them()
     {
        let test = Test::new();
        let first = test.read("k");
        test.until_statements(1).await;
        // A commit after the first statement began: the reads that arrive
        // now must see it, so they cannot share the statement out.
        test.database.number.store(7, Ordering::SeqCst);
        let later: Vec<_> = (0..5).map(|_| test.read("k")).collect();
        test.until_waiting("k", 5).await;
        let other = test.read("other");
        test.until_statements(2).await;
        test.finish(1);
        assert_eq!(first.await.unwrap().unwrap(), 0);
        test.finish(2);
        for read in later {
            assert_eq!(read.await.unwrap().unwrap(), 7);
        }
        assert_eq!(other.await.unwrap().unwrap(), 7);
        assert_eq!(
            test.statements(),
            3,
            "the five later reads of k shared one statement; other had its own"
        );
        assert!(test.all_keys_free());
    }

    #[tokio::test]
    async fn a_read_whose_caller_went_away_still_answers_the_others() {
        let test = Test::new();
        let first = test.read("k");
        test.until_statements(1).await;
        let second = test.read("k");
        test.until_waiting("k", 1).await;
        first.abort();
        assert!(first.await.unwrap_err().is_cancelled());
        test.finish(1);
        assert_eq!(second.await.unwrap().unwrap(), 0);
        assert_eq!(test.statements(), 2);
        assert!(test.all_keys_free());
    }

    #[tokio::test]
    async fn a_statement_that_panics_fails_only_the_reads_it_answers() {
        let test = Test::new();
        test.database.panics.store(2, Ordering::SeqCst);
        let first = test.read("k");
        test.until_statements(1).await;
        let second = test.read("k");
        test.until_waiting("k", 1).await;
        test.finish(1);
        // The first read sent its statement itself: the panic is its own,
        // as without sharing. The second still gets a statement, which
        // panics too, on the task that sent it for the second.
        assert!(first.await.unwrap_err().is_panic());
        test.until_statements(2).await;
        test.finish(1);
        let failed = second.await.unwrap();
        assert!(matches!(failed, Err(StoreError::Internal(_))), "{failed:?}");
        assert!(test.all_keys_free());
        let third = test.read("k");
        test.finish(1);
        assert_eq!(third.await.unwrap().unwrap(), 0);
    }

    #[tokio::test]
    async fn a_read_waits_for_another_statement_no_longer_than_its_bound() {
        let test = Test::new();
        let first = test.read("k");
        test.until_statements(1).await;
        let impatient = test.read_within("k", Duration::from_millis(20));
        let failed = impatient.await.unwrap();
        assert!(
            matches!(failed, Err(StoreError::Unavailable(_))),
            "{failed:?}"
        );
        test.finish(2);
        assert_eq!(first.await.unwrap().unwrap(), 0);
        // Nobody waits any more: no statement is sent for the read that
        // gave up.
        assert_eq!(test.statements(), 1);
        assert!(test.all_keys_free());
    }
}
