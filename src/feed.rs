//! The change feed's service (`docs/feed.md`): one tail of the store's
//! changes per process, handed to every follower in memory, and the
//! followers themselves.
//!
//! The tail reads the changes after its position once for all followers:
//! at once after a write through this process commits, else every
//! `poll_interval` (writes through other instances and processes, the
//! operator's import included; polling works through any pooler, where
//! PostgreSQL's `LISTEN` would not). It hands each change to a broadcast
//! channel that keeps the last `backlog` of them, and lets go of the
//! changes older than `retention`.
//!
//! A follower subscribes to that channel first, then reads the store from
//! its cursor until it has caught up, then takes the channel's changes,
//! keeping those its scope admits. One that falls further behind than the
//! channel keeps reads the store again: a slow follower costs the others
//! nothing, and nothing is skipped.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::clock::Clock;
use crate::domain::change::{Change, Cursor};
use crate::domain::organization_set::OrganizationSet;
use crate::store::operations::changes::{
    ChangeScope, ChangesRead, PruneChanges, ReadChanges, SCAN_LIMIT,
};
use crate::store::{Store, StoreError};

#[derive(Clone, Debug)]
pub struct FeedOptions {
    /// How often the tail looks for changes written elsewhere.
    pub poll_interval: Duration,
    /// How long a stream stays silent before a heartbeat
    /// (`--feed-heartbeat`): below the idle timeouts of load balancers.
    pub heartbeat: Duration,
    /// How long changes are kept (`--feed-retention`): a cursor older than
    /// that gets a reset.
    pub retention: Duration,
    /// Changes the broadcast channel keeps for followers behind it.
    pub backlog: usize,
    /// The longest a long poll waits: below `--request-timeout`, which
    /// would answer 503 first.
    pub longest_poll: Duration,
}

impl Default for FeedOptions {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_millis(200),
            heartbeat: Duration::from_secs(15),
            retention: Duration::from_secs(7 * 86_400),
            backlog: 4096,
            longest_poll: Duration::from_secs(29),
        }
    }
}

/// The tail's position before it has one.
const UNKNOWN: i64 = -1;

/// How often the tail lets old changes go, and how many at a time.
const PRUNE_EVERY: Duration = Duration::from_secs(60);
const PRUNE_AT_MOST: i64 = 10_000;

/// What the tail hands to followers.
#[derive(Clone, Debug)]
enum Tailed {
    Change(Arc<Change>),
    /// The tail may have skipped changes (its own position was let go, or
    /// it only now has one): followers read the store.
    Gap,
}

pub struct Feed {
    store: Arc<Store>,
    options: FeedOptions,
    clock: Clock,
    tailed: broadcast::Sender<Tailed>,
    /// The tail's position ([`UNKNOWN`] until it has read the store's
    /// head): every change after it will be handed out.
    position: AtomicI64,
    /// `true` once the service stops: streams end.
    closed: watch::Sender<bool>,
}

impl Feed {
    pub fn new(store: Arc<Store>, options: FeedOptions, clock: Clock) -> Self {
        Self {
            store,
            tailed: broadcast::Sender::new(options.backlog.max(1)),
            position: AtomicI64::new(UNKNOWN),
            options,
            clock,
            closed: watch::Sender::new(false),
        }
    }

    pub fn options(&self) -> &FeedOptions {
        &self.options
    }

    /// Ends every stream and the tail.
    pub fn close(&self) {
        self.closed.send_replace(true);
    }

    /// The tail: runs until [`Feed::close`].
    pub async fn run_tail(self: Arc<Self>) {
        let mut closed = self.closed.subscribe();
        let mut next_prune = self.clock.instant();
        // Told once when the store stops answering, once when it is back:
        // not at every poll of an outage (the store logs it too).
        let mut failing = false;
        loop {
            let read = match self.tail_position() {
                None => self.head().await.map(|head| {
                    self.position.store(head.0, Ordering::SeqCst);
                    // Followers that caught up from the store before the
                    // tail had a position may be past changes it will
                    // never hand out: they read the store again.
                    let _ = self.tailed.send(Tailed::Gap);
                }),
                Some(after) => self.send_after(after).await,
            };
            match read {
                Ok(()) => {
                    if failing {
                        tracing::info!("the change feed reads the store again");
                    }
                    failing = false;
                }
                Err(error) if !failing => {
                    failing = true;
                    if error.is_outage() {
                        tracing::debug!(%error, "the change feed waits for the store");
                    } else {
                        tracing::warn!(%error, "the change feed cannot read the store; trying again");
                    }
                }
                Err(_) => {}
            }
            if self.clock.instant() >= next_prune {
                self.prune().await;
                next_prune = self.clock.instant() + PRUNE_EVERY;
            }
            tokio::select! {
                _ = closed.wait_for(|closed| *closed) => return,
                () = self.store.written() => {}
                () = tokio::time::sleep(self.options.poll_interval) => {}
            }
        }
    }

    /// Where the feed stands now.
    async fn head(&self) -> Result<Cursor, StoreError> {
        let read = self.store.run(ReadChanges {
            after: None,
            scope: ChangeScope::default(),
            limit: 1,
        });
        Ok(read.await?.through)
    }

    /// Where the tail stands, once it has read the store's head.
    fn tail_position(&self) -> Option<Cursor> {
        match self.position.load(Ordering::SeqCst) {
            UNKNOWN => None,
            position => Some(Cursor(position)),
        }
    }

    /// Hands every change after `position` to the followers, moving the
    /// tail's position.
    async fn send_after(&self, mut position: Cursor) -> Result<(), StoreError> {
        loop {
            let read = self
                .store
                .run(ReadChanges {
                    after: Some(position),
                    scope: ChangeScope::default(),
                    limit: SCAN_LIMIT,
                })
                .await?;
            // Told before the changes are handed out: a follower that
            // starts at the new position (subscribed first) gets every
            // change after it.
            position = read.through;
            self.position.store(position.0, Ordering::SeqCst);
            if read.reset {
                let _ = self.tailed.send(Tailed::Gap);
            }
            for change in read.changes {
                // No follower: nothing to hand to.
                let _ = self.tailed.send(Tailed::Change(Arc::new(change)));
            }
            if !read.more {
                return Ok(());
            }
        }
    }

    async fn prune(&self) {
        let Some(before) = self
            .clock
            .timestamp()
            .plus_seconds(-(self.options.retention.as_secs() as i64))
        else {
            return;
        };
        let pruned = self.store.run(PruneChanges {
            before,
            at_most: PRUNE_AT_MOST,
        });
        match pruned.await {
            Ok(0) => {}
            Ok(gone) => tracing::info!(
                changes = gone,
                "let go of changes past the feed's retention"
            ),
            Err(error) if error.is_outage() => {
                tracing::debug!(%error, "the change feed waits for the store to let old changes go")
            }
            Err(error) => tracing::warn!(%error, "the change feed cannot let old changes go"),
        }
    }

    /// A stream's follower of `scope` from just after `after` (from now
    /// when `None`).
    pub async fn follow(
        self: &Arc<Self>,
        scope: ChangeScope,
        after: Option<Cursor>,
    ) -> Result<Follower, StoreError> {
        let mut follower = self.follower(scope, after).await?;
        if after.is_some() && follower.scope.project_id.is_some() {
            // A project must be one the caller may read: its first read
            // (due anyway) decides it before anything is answered, so
            // that an unknown or invisible project is a 404, not a stream
            // that ends at once (and that EventSource would reconnect to
            // for ever). From now (`None`), the head's read decided it.
            follower.catch_up().await?;
        }
        Ok(follower)
    }

    /// A follower of `scope` from just after `after`, before its first
    /// read of the changes after `after` (a long poll makes that read
    /// itself).
    async fn follower(
        self: &Arc<Self>,
        scope: ChangeScope,
        after: Option<Cursor>,
    ) -> Result<Follower, StoreError> {
        // Subscribed before the store is read: whatever the tail hands out
        // from now on reaches this follower, whatever it read before is in
        // the store.
        let tailed = self.tailed.subscribe();
        let mut follower = Follower {
            feed: self.clone(),
            scope,
            cursor: after.unwrap_or(Cursor::START),
            ready: VecDeque::new(),
            ready_through: Cursor::START,
            reset: None,
            behind: true,
            tailed,
            closed: self.closed.subscribe(),
        };
        if after.is_none() {
            // From now: where the tail stands, when it stands somewhere
            // and the scope needs no look-up (a project must be one the
            // caller may read): a crowd of followers connecting at once
            // costs the store nothing. Else the store's head.
            follower.cursor = match self.tail_position() {
                Some(tail) if follower.scope.project_id.is_none() => tail,
                _ => follower.read_store(None, 1).await?.through,
            };
            follower.behind = false;
        }
        Ok(follower)
    }

    /// At most `limit` changes of `scope` after `after` (after now when
    /// `None`), waiting up to `wait` for one when there is none yet: the
    /// long poll.
    pub async fn poll(
        self: &Arc<Self>,
        scope: ChangeScope,
        after: Option<Cursor>,
        limit: usize,
        wait: Duration,
    ) -> Result<ChangesRead, StoreError> {
        let mut follower = self.follower(scope, after).await?;
        let first = match after {
            // From now: nothing yet, and where the store stands (exact, not
            // the tail's position, which may trail it: a client asks this
            // before it lists). Changes up to there come by the channel too,
            // and are skipped.
            None => {
                let head = follower.read_store(None, 1).await?;
                follower.cursor = head.through;
                head
            }
            Some(_) => follower.read_store(Some(follower.cursor), limit).await?,
        };
        if !first.changes.is_empty() || first.reset || first.more || wait.is_zero() {
            return Ok(first);
        }
        follower.cursor = first.through;
        follower.behind = false;
        let deadline = Instant::now() + wait;
        let quiet = |through, reset| ChangesRead {
            changes: Vec::new(),
            through,
            reset,
            more: false,
        };
        match follower.next(deadline).await? {
            // Read again, for every change that came with it.
            Next::Change(_) => follower.read_store(Some(first.through), limit).await,
            Next::Reset(through) => Ok(quiet(through, true)),
            Next::Quiet | Next::Closed => Ok(quiet(follower.cursor, false)),
        }
    }
}

/// What a follower has next.
#[derive(Debug)]
pub enum Next {
    /// A change in its scope.
    Change(Change),
    /// Its cursor was before the changes kept: the client lists again,
    /// then follows from the given cursor.
    Reset(Cursor),
    /// Nothing until the deadline; [`Follower::cursor`] is where it stands.
    Quiet,
    /// The service is stopping.
    Closed,
}

/// One client's follow of the feed (a stream, or one long poll).
pub struct Follower {
    feed: Arc<Feed>,
    scope: ChangeScope,
    /// Every change in scope up to here was handed out.
    cursor: Cursor,
    /// Changes read from the store, not handed out yet...
    ready: VecDeque<Change>,
    /// ...and where the cursor stands once they are.
    ready_through: Cursor,
    /// A reset to hand out first.
    reset: Option<Cursor>,
    /// The store may hold changes after `cursor` that the channel will not
    /// bring: read it before taking the channel's.
    behind: bool,
    tailed: broadcast::Receiver<Tailed>,
    closed: watch::Receiver<bool>,
}

impl Follower {
    /// Where the follower stands: a client resumes from here.
    pub fn cursor(&self) -> Cursor {
        self.cursor
    }

    /// The caller's organizations, as its token says now.
    pub fn set_visible(&mut self, organizations: OrganizationSet) {
        self.scope.visible_to = Some(organizations);
    }

    async fn read_store(
        &self,
        after: Option<Cursor>,
        limit: usize,
    ) -> Result<ChangesRead, StoreError> {
        self.feed
            .store
            .run(ReadChanges {
                after,
                scope: self.scope.clone(),
                limit,
            })
            .await
    }

    /// Reads the store's next batch after the cursor, to hand out before
    /// the channel's changes.
    async fn catch_up(&mut self) -> Result<(), StoreError> {
        let read = self.read_store(Some(self.cursor), BATCH).await?;
        self.behind = read.more;
        if read.reset {
            self.reset = Some(read.through);
            self.cursor = read.through;
        } else if read.changes.is_empty() {
            self.cursor = read.through;
        } else {
            self.ready = read.changes.into();
            self.ready_through = read.through;
        }
        Ok(())
    }

    /// The next thing to tell the client, waiting until `deadline` at most.
    pub async fn next(&mut self, deadline: Instant) -> Result<Next, StoreError> {
        loop {
            if let Some(cursor) = self.reset.take() {
                return Ok(Next::Reset(cursor));
            }
            if let Some(change) = self.ready.pop_front() {
                self.cursor = match self.ready.is_empty() {
                    true => self.ready_through,
                    false => change.cursor,
                };
                return Ok(Next::Change(change));
            }
            if *self.closed.borrow() {
                return Ok(Next::Closed);
            }
            if self.behind {
                self.catch_up().await?;
                continue;
            }
            tokio::select! {
                _ = self.closed.changed() => return Ok(Next::Closed),
                () = tokio::time::sleep_until(deadline) => return Ok(Next::Quiet),
                tailed = self.tailed.recv() => match tailed {
                    Ok(Tailed::Change(change)) if change.cursor > self.cursor => {
                        self.cursor = change.cursor;
                        if self.scope.admits(&change) {
                            return Ok(Next::Change(Change::clone(&change)));
                        }
                    }
                    Ok(Tailed::Change(_)) => {}
                    Ok(Tailed::Gap) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        self.behind = true;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(Next::Closed),
                },
            }
        }
    }
}

/// Changes a follower reads from the store at a time.
const BATCH: usize = 100;
