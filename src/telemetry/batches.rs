//! The background writer of a server's log: lines are appended to a
//! buffer in memory, and a thread of its own writes what gathered to stderr
//! once per [`BATCH_WINDOW`], in one `write(2)`.
//!
//! Why not a line-by-line hand-off (tracing-appender): at tens of
//! thousands of requests a second it woke its thread for nearly every line,
//! which then spun in `sched_yield` before sleeping again and wrote each
//! line on its own (strace: 0.94 writes, 1.66 yields and 1.6 futex calls
//! per request; bench/RESULTS.md). Here a line costs a copy under a mutex;
//! the thread is woken once per batch.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long the first line of a batch may wait for others to join it.
pub const BATCH_WINDOW: Duration = Duration::from_millis(2);

/// Bytes of lines held before a logging thread waits for the writer: some
/// seconds of full load, enough to ride out a log collector's hiccup
/// without losing a line or growing without bound.
pub const QUEUE_LIMIT: usize = 4 * 1024 * 1024;

struct Shared {
    queue: Mutex<Queue>,
    /// A line arrived in an empty queue, or the writer is to stop.
    arrived: Condvar,
    /// The writer took the queue: there is room again.
    drained: Condvar,
}

#[derive(Default)]
struct Queue {
    bytes: Vec<u8>,
    stopping: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where log lines go: cheap to clone, one per logging call.
#[derive(Clone)]
pub struct BatchedStderr {
    shared: Arc<Shared>,
}

/// The writer thread; dropping it writes out what is queued and ends it.
pub struct Writer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the writer thread, writing to stderr.
pub fn start() -> std::io::Result<(BatchedStderr, Writer)> {
    start_writing_to(std::io::stderr())
}

fn start_writing_to(
    mut out: impl Write + Send + 'static,
) -> std::io::Result<(BatchedStderr, Writer)> {
    let shared = Arc::new(Shared {
        queue: Mutex::default(),
        arrived: Condvar::new(),
        drained: Condvar::new(),
    });
    let thread = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || write_batches(&shared, &mut out))?
    };
    let sink = BatchedStderr {
        shared: shared.clone(),
    };
    let writer = Writer {
        shared,
        thread: Some(thread),
    };
    Ok((sink, writer))
}

/// The writer thread's loop: waits for a line, lets a batch gather,
/// takes it and writes it; ends once stopping and empty.
fn write_batches(shared: &Shared, out: &mut impl Write) {
    let mut batch = Vec::new();
    loop {
        let mut queue = shared.lock();
        while queue.bytes.is_empty() && !queue.stopping {
            queue = shared
                .arrived
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if queue.bytes.is_empty() {
            return;
        }
        if !queue.stopping {
            drop(queue);
            std::thread::sleep(BATCH_WINDOW);
            queue = shared.lock();
        }
        std::mem::swap(&mut queue.bytes, &mut batch);
        drop(queue);
        shared.drained.notify_all();
        // A log that cannot be written has nowhere to say so.
        let _ = out.write_all(&batch);
        let _ = out.flush();
        batch.clear();
        // A burst once must not keep its memory for good.
        batch.shrink_to(64 * 1024);
    }
}

impl Write for BatchedStderr {
    /// Queues `line` whole (the formatter hands over one line a call).
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        let mut queue = self.shared.lock();
        while queue.bytes.len() >= QUEUE_LIMIT && !queue.stopping {
            queue = self
                .shared
                .drained
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let first = queue.bytes.is_empty();
        queue.bytes.extend_from_slice(line);
        drop(queue);
        if first {
            self.shared.arrived.notify_one();
        }
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchedStderr {
    type Writer = BatchedStderr;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.arrived.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines from many threads arrive whole, in each thread's order, and
    /// all of them by the time the writer is dropped.
    /// What the writer thread wrote, kept for the test to read.
    #[derive(Clone, Default)]
    struct Collected(Arc<Mutex<Vec<u8>>>);

    impl Write for Collected {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_arrives_whole_and_in_order() {
        let collected = Collected::default();
        let (sink, writer) = start_writing_to(collected.clone()).unwrap();
        let loggers: Vec<_> = (0..4)
            .map(|thread| {
                let mut sink = sink.clone();
                std::thread::spawn(move || {
                    for n in 0..5000 {
                        sink.write_all(format!("{thread} {n}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        loggers
            .into_iter()
            .for_each(|logger| logger.join().unwrap());
        drop(writer);
        let text = String::from_utf8(collected.0.lock().unwrap().clone()).unwrap();
        let mut next = [0; 4];
        for line in text.lines() {
            let (thread, n) = line.split_once(' ').unwrap();
            let (thread, n): (usize, usize) = (thread.parse().unwrap(), n.parse().unwrap());
            assert_eq!(n, next[thread], "thread {thread}'s lines out of order");
            next[thread] += 1;
        }
        assert_eq!(next, [5000; 4], "lines lost");
    }
}
