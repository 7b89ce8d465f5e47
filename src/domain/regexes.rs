//! The regex checks of one request ([`RegexChecks`]): every regex member
//! of a body (or of a revision being activated) must compile as the
//! `regex` crate compiles it, and all of them together may cost the
//! request at most [`REGEX_BUDGET`] of compiled programs.
//!
//! One regex is refused only when the `regex` crate refuses it (its
//! syntax, its 10 MiB size limit: `validate::REGEX_SIZE_LIMIT`): the
//! platform's proxy takes every regex the crate takes, and so must the
//! API. What one request may cost is bounded by a budget instead: the
//! compiled size of its regexes, summed (identical patterns compile and
//! count once), which grows with the CPU their compiling takes
//! (bench/RESULTS.md, "Regex checks"); a request past it is refused with a
//! 400 naming the first member over budget. The checks stop between two
//! patterns when the request is given up ([`Stop`]): its caller went away
//! or it timed out. docs/security.md, "What one request may cost".

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use regex_automata::meta;
use regex_automata::util::syntax;

use super::validate::{FieldError, REGEX_RULE, REGEX_SIZE_LIMIT};

/// Most compiled size the regexes of one request may sum to: 64 MiB,
/// about 0.25 CPU-second of compiling in a release build on the 2-core VM
/// (bench/RESULTS.md). A revision of 1,000 distinct routes like
/// `^/[a-z0-9-]+/[^/]+\.png$` (8 KiB each) takes an eighth of it; about
/// 60 distinct Unicode `\w{20}` (1.07 MiB each) spend it.
pub const REGEX_BUDGET: usize = 64 * 1024 * 1024;

/// Set when the request a check works for is given up (its future was
/// dropped: the caller closed the connection, or the request timed out):
/// the check stops before its next pattern.
#[derive(Clone, Debug, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn stop(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// How many requests may compile regexes at once, in the process: half
/// the cores, at least one, so that checks never take every core from the
/// other requests (and from a PostgreSQL on the same machine). A request
/// takes a slot before its first compile, on its thread of the blocking
/// pool, and keeps it until its checks end; one that has no regex to
/// compile takes none.
pub fn compiling_slots() -> usize {
    std::thread::available_parallelism().map_or(1, |n| (n.get() / 2).max(1))
}

/// The slots of [`compiling_slots`]: how many are taken.
struct Slots {
    taken: Mutex<usize>,
    freed: Condvar,
    most: usize,
}

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| Slots {
        taken: Mutex::new(0),
        freed: Condvar::new(),
        most: compiling_slots(),
    })
}

/// A slot taken, given back when dropped.
#[derive(Debug)]
struct Slot;

impl Slot {
    /// Waits for a slot; `None` when the request was given up meanwhile.
    fn take(stop: &Stop) -> Option<Self> {
        let slots = slots();
        let mut taken = slots.taken.lock().unwrap_or_else(|e| e.into_inner());
        while *taken >= slots.most {
            if stop.is_stopped() {
                return None;
            }
            // Woken when a slot is freed; looks at the stop now and then.
            taken = slots
                .freed
                .wait_timeout(taken, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *taken += 1;
        Some(Self)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let slots = slots();
        *slots.taken.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        slots.freed.notify_one();
    }
}

/// The checks were stopped ([`Stop`]) before they were done: nobody waits
/// for their answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped;

/// What a pattern's compile found, kept for the patterns that repeat it.
#[derive(Clone, Debug)]
enum Outcome {
    Compiles,
    Refused(String),
}

/// The regex checks of one request: its budget, the patterns compiled so
/// far, and its [`Stop`].
#[derive(Debug)]
pub struct RegexChecks {
    budget: usize,
    left: usize,
    seen: HashMap<String, Outcome>,
    stop: Stop,
    /// Whether a member was refused for the budget: the ones after it are
    /// not compiled (the request is refused already).
    spent: bool,
    compiled: u64,
    given_up: bool,
    /// Taken before the first compile ([`compiling_slots`]).
    slot: Option<Slot>,
}

impl RegexChecks {
    pub fn new(stop: Stop) -> Self {
        Self::with_budget(stop, REGEX_BUDGET)
    }

    pub fn with_budget(stop: Stop, budget: usize) -> Self {
        Self {
            budget,
            left: budget,
            seen: HashMap::new(),
            stop,
            spent: false,
            compiled: 0,
            given_up: false,
            slot: None,
        }
    }

    /// How many patterns were compiled (repeats are not).
    pub fn compiled(&self) -> u64 {
        self.compiled
    }

    /// `pattern`'s check: `Ok(Err(problem))` when it does not compile as
    /// the `regex` crate compiles it (the crate's reason, its last line:
    /// the pattern is not repeated back), or when it is the first member
    /// over the request's budget; `Err(Stopped)` when the request was
    /// given up.
    pub fn check(&mut self, pattern: &str) -> Result<Result<(), FieldError>, Stopped> {
        if let Some(outcome) = self.seen.get(pattern) {
            return Ok(outcome.to_result());
        }
        if self.spent {
            return Ok(Ok(()));
        }
        if self.slot.is_none() {
            self.slot = Slot::take(&self.stop);
        }
        if self.slot.is_none() || self.stop.is_stopped() {
            if !self.given_up {
                self.given_up = true;
                crate::metrics::check_given_up();
            }
            return Err(Stopped);
        }
        let (outcome, cost) = compile(pattern);
        self.compiled += 1;
        crate::metrics::regex_compiled();
        if cost > self.left {
            self.spent = true;
            return Ok(Err(FieldError::value(format!(
                "{REGEX_RULE}, and the regexes of one request may compile to at most {} MiB in all: this one is over (identical patterns count once)",
                self.budget >> 20
            ))));
        }
        self.left -= cost;
        let result = outcome.to_result();
        self.seen.insert(pattern.to_owned(), outcome);
        Ok(result)
    }
}

impl Outcome {
    fn to_result(&self) -> Result<(), FieldError> {
        match self {
            Self::Compiles => Ok(()),
            Self::Refused(reason) => Err(FieldError::value(format!("{REGEX_RULE}: {reason}"))),
        }
    }
}

/// Compiles `pattern` exactly as `regex::Regex::new` does (the same meta
/// builder and configuration: `regex::RegexBuilder`'s defaults), so that
/// what is accepted here is what the crate accepts; answers what it found
/// and what it cost the budget: the compiled program's size, or the size
/// limit for a pattern refused as too big (it was compiled up to it).
fn compile(pattern: &str) -> (Outcome, usize) {
    let config = meta::Config::new()
        .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
        .hybrid_cache_capacity(2 * (1 << 20))
        .match_kind(regex_automata::MatchKind::LeftmostFirst)
        .utf8_empty(true);
    let built = meta::Builder::new()
        .configure(config)
        .syntax(syntax::Config::new().utf8(true))
        .build(pattern);
    match built {
        Ok(regex) => (Outcome::Compiles, regex.memory_usage().max(pattern.len())),
        Err(error) if error.size_limit().is_some() => (
            Outcome::Refused(format!(
                "it compiles to more than {} MiB",
                REGEX_SIZE_LIMIT >> 20
            )),
            REGEX_SIZE_LIMIT,
        ),
        Err(error) => {
            let text = match error.syntax_error() {
                Some(syntax) => syntax.to_string(),
                None => error.to_string(),
            };
            let reason = text
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or_default();
            let reason = reason.strip_prefix("error: ").unwrap_or(reason);
            (Outcome::Refused(reason.to_owned()), pattern.len())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(pattern: &str) -> Result<(), String> {
        RegexChecks::new(Stop::new())
            .check(pattern)
            .unwrap()
            .map_err(|e| e.message)
    }

    /// What is accepted is what `regex::Regex::new` accepts, near the size
    /// limit too, and a refusal gives the crate's reason.
    #[test]
    fn accepts_what_the_regex_crate_accepts() {
        for pattern in [
            "^/eu/.*",
            "",
            "(?i)/Images/[a-z0-9]+\\.png$",
            "\\p{Greek}",
            "\\d{1,3}",
            "^/[\\w-]+/\\w{10}$",
            "(?:\\w+/){20}\\w+",
            "\\w{60}",
            "^/\\w{32}$",
            "\\w{200}",
            "\\w{250}",
            "\\w{260}",
            "\\w{300}",
            "a{1000}{1000}",
            "(?-u)\\w{2000}",
            "(",
            "[a-",
            "(?=x)",
            "\\1",
            "(((((((((((((((((((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))))))))))))))))))",
            "\\xFF",
            "(?-u)\\xFF",
            "[[:alpha:]]{50}",
        ] {
            let by_crate = ::regex::Regex::new(pattern).map(|_| ());
            let here = checked(pattern);
            assert_eq!(by_crate.is_ok(), here.is_ok(), "{pattern}: {here:?}");
            if let Err(reason) = here {
                assert!(reason.starts_with(REGEX_RULE), "{pattern}: {reason}");
                assert!(!reason.contains('\n'), "{pattern}: {reason}");
            }
        }
        for (bad, reason) in [
            ("(", "unclosed group"),
            ("[a-", "unclosed character class"),
            ("(?=x)", "look-around"),
            ("\\1", "backreferences are not supported"),
            ("a{1000}{1000}", "compiles to more than 10 MiB"),
            ("\\w{300}", "compiles to more than 10 MiB"),
        ] {
            let reason_given = checked(bad).unwrap_err();
            assert!(reason_given.contains(reason), "{bad}: {reason_given}");
        }
    }

    #[test]
    fn identical_patterns_compile_once() {
        let mut checks = RegexChecks::with_budget(Stop::new(), 4 * 1024 * 1024);
        for _ in 0..1000 {
            assert_eq!(checks.check("\\w{20}"), Ok(Ok(())));
        }
        assert_eq!(checks.compiled(), 1);
    }

    #[test]
    fn the_budget_refuses_the_first_member_over_it() {
        let mut checks = RegexChecks::with_budget(Stop::new(), 4 * 1024 * 1024);
        let mut refused = None;
        for i in 0..100 {
            if let Err(problem) = checks.check(&format!("\\w{{20}}{i}")).unwrap() {
                refused = Some((i, problem));
                break;
            }
        }
        let (i, problem) = refused.expect("the budget runs out");
        assert!(i > 0, "{problem}");
        assert!(
            problem.message.contains("at most 4 MiB in all"),
            "{problem}"
        );
        // Past it nothing more is compiled.
        let compiled = checks.compiled();
        assert_eq!(checks.check("\\w{21}"), Ok(Ok(())));
        assert_eq!(checks.compiled(), compiled);
    }

    #[test]
    fn a_stopped_check_compiles_nothing_more() {
        let stop = Stop::new();
        let mut checks = RegexChecks::new(stop.clone());
        assert_eq!(checks.check("a+"), Ok(Ok(())));
        stop.stop();
        assert_eq!(checks.check("b+"), Err(Stopped));
        assert_eq!(checks.compiled(), 1);
    }

    /// While every slot is taken, another request's checks wait, and stop
    /// waiting when it is given up, having compiled nothing.
    #[test]
    fn a_check_waits_for_a_slot_until_given_up() {
        let holders: Vec<RegexChecks> = (0..compiling_slots())
            .map(|n| {
                let mut checks = RegexChecks::new(Stop::new());
                assert_eq!(checks.check(&format!("a{n}")), Ok(Ok(())));
                checks
            })
            .collect();
        let stop = Stop::new();
        let waiting = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut checks = RegexChecks::new(stop);
                (checks.check("b+"), checks.compiled())
            })
        };
        stop.stop();
        assert_eq!(waiting.join().unwrap(), (Err(Stopped), 0));
        drop(holders);
        // A slot freed is taken.
        assert_eq!(RegexChecks::new(Stop::new()).check("c+"), Ok(Ok(())));
    }
}
