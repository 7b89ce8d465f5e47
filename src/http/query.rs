//! Strict query strings (`docs/decisions.md` section 2): an unknown parameter, a
//! repeated one, an empty value, a `limit` that is not an integer from 1 to
//! 100 or an `order_direction` other than `ASC`/`DESC` is a 400 naming the
//! parameter.

use std::borrow::Cow;

use crate::domain::ids;
use crate::domain::pagination::{Direction, MAX_LIMIT, PageRequest};
use crate::domain::token::TOKEN_PREFIX;

use crate::http::error::ApiError;

/// The parameters of a page, which every listing takes.
const PAGE_PARAMETERS: [&str; 3] = ["limit", "start_key", "order_direction"];

/// Longest unknown parameter name that an error repeats back.
const MAX_ECHOED_NAME: usize = 32;

pub struct QueryParams<'a> {
    values: Vec<(&'static str, Cow<'a, str>)>,
}

impl<'a> QueryParams<'a> {
    /// Parses `raw` (the part after `?`), allowing only `allowed` names.
    pub fn parse(raw: Option<&'a str>, allowed: &[&'static str]) -> Result<Self, ApiError> {
        let mut values: Vec<(&'static str, Cow<'a, str>)> = Vec::new();
        for (name, value) in form_urlencoded::parse(raw.unwrap_or_default().as_bytes()) {
            let Some(known) = allowed.iter().find(|a| **a == name) else {
                let takes = allowed.join(", ");
                return Err(match echoable(&name) {
                    Some(name) => ApiError::invalid(
                        name,
                        format!("is not a parameter of this operation (it takes {takes})"),
                    ),
                    None => ApiError::invalid(
                        "query",
                        format!(
                            "holds a parameter this operation does not take (it takes {takes})"
                        ),
                    ),
                });
            };
            if values.iter().any(|(n, _)| n == known) {
                return Err(ApiError::invalid(*known, "must be given at most once"));
            }
            if value.is_empty() {
                return Err(ApiError::invalid(*known, "must not be empty"));
            }
            values.push((known, value));
        }
        Ok(Self { values })
    }

    /// A listing's query string: its own `filters`, then the page
    /// parameters every listing takes (`limit`, `start_key`,
    /// `order_direction`); and the page it asks for, `default_limit` items
    /// when it names no `limit`.
    pub fn listing(
        raw: Option<&'a str>,
        filters: &[&'static str],
        default_limit: u32,
    ) -> Result<(Self, PageRequest), ApiError> {
        let allowed: Vec<&'static str> = filters.iter().chain(&PAGE_PARAMETERS).copied().collect();
        let params = Self::parse(raw, &allowed)?;
        let page = params.page_request(default_limit)?;
        Ok((params, page))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_ref())
    }

    /// `limit`, `start_key` and `order_direction`.
    /// `limit`: `default` when absent, else an integer from 1 to `max`.
    pub fn limit(&self, default: u32, max: u32) -> Result<u32, ApiError> {
        match self.get("limit") {
            None => Ok(default),
            Some(text) => parse_limit(text, max).ok_or_else(|| {
                ApiError::invalid("limit", format!("must be an integer between 1 and {max}"))
            }),
        }
    }

    fn page_request(&self, default_limit: u32) -> Result<PageRequest, ApiError> {
        let limit = self.limit(default_limit, MAX_LIMIT)?;
        let direction = match self.get("order_direction") {
            None => Direction::default(),
            Some(text) => Direction::parse(text)
                .ok_or_else(|| ApiError::invalid("order_direction", "must be ASC or DESC"))?,
        };
        // Every key (an id, a revision number) has the id's shape: anything
        // else never named an item, and is refused before any store look-up.
        let start_key = self.get("start_key");
        if start_key.is_some_and(|key| !ids::is_valid_id(key)) {
            return Err(ApiError::unknown_start_key());
        }
        Ok(PageRequest {
            start_key: start_key.map(str::to_owned),
            direction,
            limit,
        })
    }
}

/// An unknown parameter's name as it may be repeated in an error: short,
/// plain, and nothing like a token (someone may paste a secret after `?`).
fn echoable(name: &str) -> Option<&str> {
    let plain = (1..=MAX_ECHOED_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.[]".contains(&b))
        && !name.starts_with(TOKEN_PREFIX);
    plain.then_some(name)
}

/// Decimal digits only (no sign, no spaces, no fraction), 1 to `max`.
fn parse_limit(text: &str, max: u32) -> Option<u32> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let significant = text.trim_start_matches('0');
    if significant.len() > 9 {
        return None;
    }
    significant.parse().ok().filter(|n| (1..=max).contains(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOWED: &[&str] = &["limit", "start_key", "order_direction", "name"];

    fn param_of(error: ApiError) -> String {
        match error {
            ApiError::InvalidParameter { param, .. } => param,
            other => panic!("not a parameter error: {other:?}"),
        }
    }

    #[test]
    fn accepts_known_parameters_and_decodes_them() {
        let q = QueryParams::parse(Some("name=a%20b+c&limit=5"), ALLOWED).unwrap();
        assert_eq!(q.get("name"), Some("a b c"));
        let page = q.page_request(20).unwrap();
        assert_eq!(page.limit, 5);
        assert_eq!(page.direction, Direction::Desc);
        assert_eq!(page.start_key, None);
        assert!(QueryParams::parse(None, ALLOWED).is_ok());
        assert!(QueryParams::parse(Some(""), ALLOWED).is_ok());
    }

    #[test]
    fn unknown_repeated_and_empty_parameters_are_refused_by_name() {
        let fail = |q: &str| param_of(QueryParams::parse(Some(q), ALLOWED).err().unwrap());
        assert_eq!(fail("colour=red"), "colour");
        assert_eq!(fail("limit=1&limit=2"), "limit");
        assert_eq!(fail("start_key="), "start_key");
        assert_eq!(fail("name"), "name");
        assert_eq!(fail("LIMIT=3"), "LIMIT");
        // Names that could be a pasted secret, or are just odd, are not repeated.
        assert_eq!(fail(&"x".repeat(33)), "query");
        assert_eq!(fail("pxd_abc"), "query");
        assert_eq!(fail(&crate::domain::token::generate()), "query");
        assert_eq!(fail("a%20b=1"), "query");
    }

    #[test]
    fn limit_and_direction_rules() {
        let page = |q: &str| {
            QueryParams::parse(Some(q), ALLOWED)
                .unwrap()
                .page_request(20)
        };
        for good in ["1", "100", "050", "0000100"] {
            assert!(page(&format!("limit={good}")).is_ok(), "{good}");
        }
        for bad in [
            "0",
            "000",
            "101",
            "-1",
            "+5",
            "1.5",
            "abc",
            " 5",
            "99999999999999999999",
        ] {
            let encoded: String = form_urlencoded::byte_serialize(bad.as_bytes()).collect();
            assert_eq!(
                param_of(page(&format!("limit={encoded}")).unwrap_err()),
                "limit",
                "{bad}"
            );
        }
        assert_eq!(
            page("order_direction=ASC").unwrap().direction,
            Direction::Asc
        );
        assert_eq!(
            param_of(page("order_direction=asc").unwrap_err()),
            "order_direction"
        );
    }

    /// Fuzz-style: any query string a client can send. Bounded by
    /// `PROPTEST_CASES` (proptest's default, 256, when unset).
    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// Raw query strings: any text, any bytes percent-encoded, and
        /// `name=value` pairs mixing the listing's names with others.
        fn raw_query() -> impl Strategy<Value = String> {
            let name = prop_oneof![
                proptest::sample::select(ALLOWED.to_vec()).prop_map(str::to_owned),
                "[A-Za-z_.\\[\\]-]{0,40}",
                any::<String>(),
            ];
            let value = prop_oneof![
                "[0-9]{0,5}",
                "ASC|DESC|asc|up",
                "[A-Za-z0-9_-]{0,70}",
                any::<String>(),
            ];
            let pair = (name, value, any::<bool>()).prop_map(|(name, value, encode)| {
                if encode {
                    form_urlencoded::Serializer::new(String::new())
                        .append_pair(&name, &value)
                        .finish()
                } else {
                    format!("{name}={value}")
                }
            });
            prop_oneof![
                any::<String>(),
                proptest::collection::vec(any::<u8>(), 0..80)
                    .prop_map(|bytes| form_urlencoded::byte_serialize(&bytes).collect()),
                proptest::collection::vec(pair, 0..6).prop_map(|pairs| pairs.join("&")),
            ]
        }

        /// A valid value for each parameter, as a client would send it.
        fn valid_value(name: &'static str) -> BoxedStrategy<String> {
            match name {
                "limit" => ("0{0,3}", 1..=MAX_LIMIT)
                    .prop_map(|(zeros, n)| format!("{zeros}{n}"))
                    .boxed(),
                "order_direction" => prop_oneof![Just("ASC"), Just("DESC")]
                    .prop_map(str::to_owned)
                    .boxed(),
                "start_key" => "[A-Za-z0-9_-]{1,64}".boxed(),
                // Any non-empty text, spaces and `&`, `=`, `+` included.
                _ => ".{1,40}".boxed(),
            }
        }

        fn valid_query() -> impl Strategy<Value = Vec<(&'static str, String)>> {
            proptest::sample::subsequence(ALLOWED.to_vec(), 0..=ALLOWED.len())
                .prop_flat_map(|names| {
                    let values: Vec<_> = names.iter().map(|n| valid_value(n)).collect();
                    (Just(names), values)
                })
                .prop_map(|(names, values)| names.into_iter().zip(values).collect::<Vec<_>>())
                .prop_shuffle()
        }

        proptest! {
            /// Never a panic; every refusal names a parameter: one of the
            /// listing's, `query`, or a short plain name the query holds.
            #[test]
            fn any_query_is_accepted_or_refused_by_name(raw in raw_query()) {
                let page = QueryParams::parse(Some(&raw), ALLOWED)
                    .and_then(|params| params.page_request(20));
                match page {
                    Ok(page) => {
                        prop_assert!((1..=MAX_LIMIT).contains(&page.limit));
                        if let Some(key) = &page.start_key {
                            prop_assert!(ids::is_valid_id(key));
                        }
                    }
                    Err(error) => {
                        let param = param_of(error);
                        let decoded: Vec<String> = form_urlencoded::parse(raw.as_bytes())
                            .map(|(name, _)| name.into_owned())
                            .collect();
                        prop_assert!(
                            ALLOWED.contains(&param.as_str())
                                || param == "query"
                                || (echoable(&param).is_some() && decoded.contains(&param)),
                            "{raw:?} refused naming {param:?}"
                        );
                    }
                }
            }

            /// Valid parameters, in any order, come back as they were sent.
            #[test]
            fn valid_queries_round_trip(pairs in valid_query()) {
                let mut raw = form_urlencoded::Serializer::new(String::new());
                for (name, value) in &pairs {
                    raw.append_pair(name, value);
                }
                let raw = raw.finish();
                let params = QueryParams::parse(Some(&raw), ALLOWED).expect("valid");
                for name in ALLOWED {
                    let sent = pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
                    prop_assert_eq!(params.get(name), sent, "{}", name);
                }
                let page = params.page_request(20).expect("valid");
                let sent = |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
                prop_assert_eq!(page.limit, sent("limit").map_or(20, |l| l.parse().unwrap()));
                prop_assert_eq!(
                    page.direction,
                    match sent("order_direction").as_deref() {
                        Some("ASC") => Direction::Asc,
                        _ => Direction::Desc,
                    }
                );
                prop_assert_eq!(page.start_key, sent("start_key"));
            }
        }
    }
}
