//! The service in process, on a fresh store, over loopback HTTP.

use super::*;

pub struct TestApp {
    pub address: SocketAddr,
    /// The `admin_listen` address, when the options asked for one.
    pub admin_address: Option<SocketAddr>,
    pub store: Arc<Store>,
    pub client: reqwest::Client,
    /// The data the service runs on (shared by its other instances).
    pub data: Arc<TestStore>,
    /// The service's clock (and its store's, when the app opened it):
    /// a test moves it instead of waiting for a lifetime to pass.
    pub clock: Clock,
    /// What the service was started with (a restart keeps it).
    options: ServiceOptions,
    /// What its store was opened with (a restart keeps it).
    pub store_options: StoreOptions,
    auth: Arc<Authenticator>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl TestApp {
    pub async fn spawn(backend: Backend) -> Self {
        Self::spawn_with(backend, test_options(), suite_store_options()).await
    }

    pub async fn spawn_with(
        backend: Backend,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        let store_options = on_the_clock_of(&options, store_options);
        let data = Arc::new(TestStore::with_options(backend, store_options).await);
        let store_options = data.options.clone();
        Self::serve(data.store.clone(), data, options, store_options).await
    }

    /// The service on `data`.
    pub async fn on(data: TestStore) -> Self {
        let data = Arc::new(data);
        let store_options = data.options.clone();
        Self::serve(data.store.clone(), data, test_options(), store_options).await
    }

    /// Another instance of the service on the same data, with a store
    /// connection of its own, as a second `proxydeck serve` would have.
    pub async fn another_instance(&self) -> Self {
        self.another_instance_with(test_options()).await
    }

    /// [`TestApp::another_instance`] with `options`.
    pub async fn another_instance_with(&self, options: ServiceOptions) -> Self {
        self.another_instance_on(options, suite_store_options())
            .await
    }

    /// [`TestApp::another_instance`] with `options` and a store opened
    /// with `store_options`.
    pub async fn another_instance_on(
        &self,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        Self::serve_again(self.data.clone(), options, store_options).await
    }

    /// A service on `data` with a store opened anew.
    async fn serve_again(
        data: Arc<TestStore>,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        let store_options = StoreOptions {
            pooler: data.options.pooler.clone(),
            ..on_the_clock_of(&options, store_options)
        };
        let store = store::open(&data.url, &store_options)
            .await
            .expect("the store opens again");
        Self::serve(Arc::new(store), data, options, store_options).await
    }

    /// This service stopped (its open streams end), then served again on
    /// the same data by a store opened anew with the options its store
    /// had, as a restarted `proxydeck serve` would be: nothing of the old
    /// one's memory is left (its feed's tail, its caches), and it listens
    /// on another port.
    pub async fn restart(self) -> Self {
        let data = self.data.clone();
        let (options, store_options) = (self.options.clone(), self.store_options.clone());
        self.stop().await;
        Self::serve_again(data, options, store_options).await
    }

    /// Writes the token uses the service has noted (every request's, once
    /// its answer came) now, as its flusher would at its next tick.
    pub async fn flush_token_uses(&self) {
        self.auth.flush_usage().await.expect("the uses are written");
    }

    async fn serve(
        store: Arc<Store>,
        data: Arc<TestStore>,
        options: ServiceOptions,
        store_options: StoreOptions,
    ) -> Self {
        let clock = options.clock.clone();
        let service = Service::bind(store.clone(), options.clone())
            .await
            .expect("the service binds");
        let address = service.local_addr();
        let admin_address = service.admin_addr();
        let auth = service.authenticator();
        let (shutdown, stop) = oneshot::channel::<()>();
        let task = tokio::spawn(service.run(async {
            let _ = stop.await;
        }));
        Self {
            address,
            admin_address,
            store,
            client: client_builder().build().expect("an HTTP client"),
            data,
            clock,
            options,
            store_options,
            auth,
            shutdown: Some(shutdown),
            task: Some(task),
        }
    }

    /// The SQLite file of the service.
    pub fn db_path(&self) -> &std::path::Path {
        &self.data.path
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.address)
    }

    /// GET with `Authorization: Bearer <token>`.
    pub async fn get(&self, path_and_query: &str, token: &str) -> reqwest::Response {
        self.client
            .get(self.url(path_and_query))
            .bearer_auth(token)
            .send()
            .await
            .expect("the request is answered")
    }

    /// GET, answering the status and the JSON body (checked to be JSON).
    pub async fn get_json(&self, path_and_query: &str, token: &str) -> (StatusCode, Value) {
        let response = self.get(path_and_query, token).await;
        json_of(response).await
    }

    /// Loads JSON objects through the import path.
    pub async fn seed(&self, lines: Vec<Value>) -> ObjectCounts {
        seed(self.store.as_ref(), lines)
            .await
            .expect("the fixture imports")
    }

    /// A new token for `user_id`; answers its secret.
    pub async fn token(&self, user_id: &str) -> String {
        self.token_with(user_id, "test", None).await.1
    }

    pub async fn token_with(
        &self,
        user_id: &str,
        name: &str,
        expires_at: Option<Timestamp>,
    ) -> (ApiToken, String) {
        mint(self.store.as_ref(), user_id, name, expires_at).await
    }

    /// A SQLite service whose store gives up after 300 ms and keeps no
    /// recent pages: for outage tests. (While nothing commits, a page kept
    /// in memory is still the page, and would rightly be answered through
    /// an outage.)
    pub async fn spawn_impatient() -> Self {
        let store = StoreOptions {
            timeout: Duration::from_millis(300),
            caches: Caches {
                recent_pages: false,
                ..suite_caches()
            },
            ..StoreOptions::default()
        };
        Self::spawn_with(Backend::Sqlite, test_options(), store).await
    }

    /// Moves the SQLite file away (a volume gone, a restore under way) and
    /// the clock past the connections' next check of their file, so that
    /// each notices when next used. Answers where the file went.
    pub fn take_store_away(&self) -> PathBuf {
        let moved = self.db_path().with_extension("moved");
        std::fs::rename(self.db_path(), &moved).expect("the database file moves");
        self.clock.advance(proxydeck::store::FILE_CHECK_INTERVAL);
        moved
    }

    pub fn bring_store_back(&self, moved: PathBuf) {
        std::fs::rename(moved, self.db_path()).expect("the database file comes back");
    }

    /// Stops the server and waits until it has finished.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("the service stops cleanly");
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// `store` on the service's clock: a store the app opens moves with it.
fn on_the_clock_of(service: &ServiceOptions, store: StoreOptions) -> StoreOptions {
    StoreOptions {
        clock: service.clock.clone(),
        ..store
    }
}
