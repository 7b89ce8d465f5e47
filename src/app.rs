//! The running service: a store, an authenticator and the HTTP router on a
//! bound listener. `proxydeck serve`, `proxydeck demo` and the tests all
//! start it this way.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use futures_util::FutureExt as _;
use tokio::net::TcpListener;

use crate::auth::{AuthOptions, Authenticator};
use crate::clock::Clock;
use crate::console;
use crate::domain_checks::{DomainChecks, DomainOptions};
use crate::feed::{Feed, FeedOptions};
use crate::http::transport::server::{self, ServerOptions};
use crate::http::{self, AppState, Metering, MetricsRoute, RequestLimits, Routes, Services};
use crate::mail::{InvitationOptions, Invitations};
use crate::quotas::{Follows, QuotaOptions};
use crate::rate_limit::failures::FailureLimiter;
use crate::rate_limit::{RateLimitOptions, RateLimiter};
use crate::rollouts::Rollouts;
use crate::store::Store;

/// Everything `serve` can be told, besides the database.
#[derive(Clone, Debug)]
pub struct ServiceOptions {
    /// Address to listen on, such as `127.0.0.1:8080` (port 0: any free port).
    pub listen: String,
    /// A second address that serves `/metrics` (then absent from `listen`)
    /// and the health endpoints (also kept on `listen`).
    pub admin_listen: Option<String>,
    /// Whether `/console` serves the web console.
    pub console: bool,
    pub auth: AuthOptions,
    pub server: ServerOptions,
    pub limits: RequestLimits,
    pub rate_limit: RateLimitOptions,
    pub feed: FeedOptions,
    /// What one caller may hold at once (`quotas.rs`).
    pub quotas: QuotaOptions,
    /// Custom domains: their DNS checks and limits (`domain_checks.rs`).
    pub domains: DomainOptions,
    /// Invitations: their lifetime, hourly bound, link and email (`mail.rs`).
    pub invitations: InvitationOptions,
    /// Where lifetimes and limits read the time (tests move their own).
    pub clock: Clock,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            admin_listen: None,
            console: true,
            auth: AuthOptions::default(),
            server: ServerOptions::default(),
            limits: RequestLimits::default(),
            rate_limit: RateLimitOptions::default(),
            feed: FeedOptions::default(),
            quotas: QuotaOptions::default(),
            domains: DomainOptions::default(),
            invitations: InvitationOptions::default(),
            clock: Clock::system(),
        }
    }
}

pub struct Service {
    listener: TcpListener,
    auth: Arc<Authenticator>,
    feed: Arc<Feed>,
    domain_checks: Arc<DomainChecks>,
    rollouts: Arc<Rollouts>,
    rate_limiter: Option<Arc<RateLimiter>>,
    failures: Option<Arc<FailureLimiter>>,
    router: axum::Router,
    /// The `--admin-listen` listener and its router.
    admin: Option<(TcpListener, axum::Router)>,
    server: ServerOptions,
}

/// The service's sockets, bound before anything else is made: a start
/// on an address already taken fails before it opens (or creates) a
/// store, so that it leaves nothing behind.
pub struct Listeners {
    api: TcpListener,
    /// `--admin-listen`'s, when there is one.
    admin: Option<TcpListener>,
}

impl Listeners {
    pub async fn bind(options: &ServiceOptions) -> anyhow::Result<Self> {
        let api = TcpListener::bind(&options.listen)
            .await
            .with_context(|| format!("cannot listen on {}", options.listen))?;
        let admin = match &options.admin_listen {
            None => None,
            Some(address) => Some(
                TcpListener::bind(address)
                    .await
                    .with_context(|| format!("--admin-listen: cannot listen on {address}"))?,
            ),
        };
        Ok(Self { api, admin })
    }
}

impl Service {
    /// Binds the listeners, so that the address is known (and taken)
    /// before the service runs.
    pub async fn bind(store: Arc<Store>, options: ServiceOptions) -> anyhow::Result<Self> {
        let listeners = Listeners::bind(&options).await?;
        Self::on(listeners, store, options)
    }

    /// The service on listeners bound already.
    pub fn on(
        listeners: Listeners,
        store: Arc<Store>,
        options: ServiceOptions,
    ) -> anyhow::Result<Self> {
        let Listeners {
            api: listener,
            admin: admin_listener,
        } = listeners;
        let clock = options.clock;
        let auth = Arc::new(Authenticator::new(
            store.clone(),
            options.auth,
            clock.clone(),
        ));
        let feed = Arc::new(Feed::new(
            store.clone(),
            FeedOptions {
                longest_poll: options
                    .limits
                    .timeout
                    .saturating_sub(Duration::from_secs(1)),
                ..options.feed
            },
            clock.clone(),
        ));
        let rate_limiter = RateLimiter::new(&options.rate_limit, &clock)?.map(Arc::new);
        let failures = options
            .rate_limit
            .failures
            .as_ref()
            .map(|policy| Arc::new(FailureLimiter::new(policy, clock)));
        let domain_checks = Arc::new(DomainChecks::new(store.clone(), options.domains)?);
        let invitations = Arc::new(Invitations::new(options.invitations)?);
        let rollouts = Arc::new(Rollouts::new(store.clone()));
        let state = AppState::new(Services {
            invitations,
            rollouts: rollouts.clone(),
            domain_checks: domain_checks.clone(),
            store,
            auth: auth.clone(),
            feed: feed.clone(),
            metering: rate_limiter
                .clone()
                .map(|limiter| Arc::new(Metering::new(limiter))),
            failures: failures.clone(),
            client_address_header: options.rate_limit.client_address_header.clone(),
            follows: Follows::new(&options.quotas),
            quotas: options.quotas.clone(),
        });
        let (router, admin) = match admin_listener {
            None => (
                http::router(
                    state,
                    options.limits,
                    MetricsRoute::Included,
                    console_routes(options.console),
                ),
                None,
            ),
            Some(admin_listener) => (
                http::router(
                    state.clone(),
                    options.limits.clone(),
                    MetricsRoute::Excluded,
                    console_routes(options.console),
                ),
                Some((admin_listener, http::admin_router(state, options.limits))),
            ),
        };
        Ok(Self {
            listener,
            auth,
            feed,
            domain_checks,
            rollouts,
            rate_limiter,
            failures,
            router,
            admin,
            server: options.server,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        address_of(&self.listener)
    }

    /// The service's authenticator: what embeds the service (a test) can
    /// write the token uses it noted at once with
    /// [`Authenticator::flush_usage`] instead of waiting for the flusher.
    pub fn authenticator(&self) -> Arc<Authenticator> {
        self.auth.clone()
    }

    /// The `--admin-listen` address, when there is one.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin
            .as_ref()
            .map(|(listener, _)| address_of(listener))
    }

    /// Serves until `shutdown` resolves; then finishes in-flight requests and
    /// writes the token uses it still holds.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let (stop_flusher, flusher_stop) = tokio::sync::oneshot::channel::<()>();
        let flusher = tokio::spawn(self.auth.clone().run_usage_flusher(async {
            let _ = flusher_stop.await;
        }));
        let sweeper = self
            .rate_limiter
            .as_ref()
            .map(|limiter| tokio::spawn(limiter.clone().run_sweeper()));
        let failures_sweeper = self
            .failures
            .as_ref()
            .map(|limiter| tokio::spawn(limiter.clone().run_sweeper()));
        let tail = tokio::spawn(self.feed.clone().run_tail());
        let domain_checks = tokio::spawn(self.domain_checks.clone().run());
        let rollouts = tokio::spawn(self.rollouts.clone().run());
        tracing::info!(address = %self.local_addr(), "serving");
        // Listening, on an open store: ready.
        tell_service_manager(sd_notify::NotifyState::Ready);
        let feed = self.feed.clone();
        let shutdown = async move {
            shutdown.await;
            tell_service_manager(sd_notify::NotifyState::Stopping);
            // Streams end, so that the connections they hold can close.
            feed.close();
        }
        .shared();
        let api = server::serve(
            "api",
            self.listener,
            self.router,
            self.server.clone(),
            shutdown.clone(),
        );
        match self.admin {
            None => api.await,
            Some((listener, router)) => {
                tracing::info!(admin = %address_of(&listener), "health and metrics endpoints");
                let admin = server::serve("admin", listener, router, self.server, shutdown);
                tokio::join!(api, admin);
            }
        }
        domain_checks.abort();
        rollouts.abort();
        for sweeper in [sweeper, failures_sweeper].into_iter().flatten() {
            sweeper.abort();
        }
        self.feed.close();
        let _ = tail.await;
        let _ = stop_flusher.send(());
        let _ = flusher.await;
        tracing::info!("stopped");
    }
}

/// The web console's routes when it is on (`--console`), served beside
/// the API's; none otherwise.
fn console_routes(on: bool) -> Routes {
    if on { console::routes() } else { Routes::new() }
}

/// Tells systemd (a `Type=notify` unit, `deploy/proxydeck.service`) the
/// service's state over `$NOTIFY_SOCKET`; without that variable, nothing.
fn tell_service_manager(state: sd_notify::NotifyState<'_>) {
    if let Err(error) = sd_notify::notify(&[state]) {
        tracing::warn!(%error, "cannot tell the service manager the service's state");
    }
}

fn address_of(listener: &TcpListener) -> SocketAddr {
    listener
        .local_addr()
        .expect("a bound TCP listener has an address")
}

/// A future that resolves on SIGTERM or SIGINT (Ctrl-C). The handlers are
/// installed when this is called, not when the future is first polled:
/// call it first thing, so that a signal arriving while the service starts
/// still shuts it down gracefully.
pub fn shutdown_signal() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
